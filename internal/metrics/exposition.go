package metrics

import (
	"bufio"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The /metrics endpoint writes the Observer's series in the Prometheus text
// format (version 0.0.4) itself, byte for byte what the client library's
// registry and encoder write for them (TestTextMatchesClientLibrary), and
// the go_* and process_* collectors' through the library. At 10,000
// partitions the Observer has some 240,000 series; the library builds a
// protobuf message per series, sorts each family's by label pairs and
// checks every name and label for escaping, which took seconds per scrape
// on 2 CPUs (bench/scale). Here the partitions are sorted once and each
// series is one formatted line.

// family is what the text exposition needs of a descriptor.
type family struct {
	name, help string
	// order lists the descriptor's label indices in the order of the
	// label names, the order in which the text format writes them.
	order []int
	names []string // label names, in that order
}

// families maps each descriptor made by desc to its family. It is written
// only while the package's variables are initialised.
var families = map[*prometheus.Desc]*family{}

func newFamily(name, help string, labels []string) *family {
	f := &family{name: name, help: help}
	for i := range labels {
		f.order = append(f.order, i)
	}
	sort.Slice(f.order, func(a, b int) bool { return labels[f.order[a]] < labels[f.order[b]] })
	for _, i := range f.order {
		f.names = append(f.names, labels[i])
	}
	return f
}

// textSample is one series of a family: its label values in the family's
// label-name order, and its value.
type textSample struct {
	vals []string
	v    float64
}

// familySamples gathers one family's samples as the Observer emits them.
type familySamples struct {
	f       *family
	counter bool
	samples []textSample
}

// writeText writes o's series, and the families of std (sorted by name,
// as a registry's Gather returns them), in the text format, families in
// name order and each family's samples in label-value order, as the client
// library does. A family without samples is left out.
func (o *Observer) writeText(w io.Writer, std []*dto.MetricFamily) error {
	byDesc := map[*prometheus.Desc]*familySamples{}
	o.series(func(d *prometheus.Desc, vt prometheus.ValueType, v float64, labels []string) {
		fs := byDesc[d]
		if fs == nil {
			fs = &familySamples{f: families[d], counter: vt == prometheus.CounterValue}
			byDesc[d] = fs
		}
		vals := make([]string, len(labels))
		for i, j := range fs.f.order {
			vals[i] = labels[j]
		}
		fs.samples = append(fs.samples, textSample{vals, v})
	}, true)
	own := make([]*familySamples, 0, len(byDesc))
	for _, fs := range byDesc {
		own = append(own, fs)
	}
	sort.Slice(own, func(i, j int) bool { return own[i].f.name < own[j].f.name })
	bw := bufio.NewWriterSize(w, 64<<10)
	buf := make([]byte, 0, 256)
	i, j := 0, 0
	for i < len(own) || j < len(std) {
		if j < len(std) && (i == len(own) || std[j].GetName() < own[i].f.name) {
			if _, err := expfmt.MetricFamilyToText(bw, std[j]); err != nil {
				return err
			}
			j++
			continue
		}
		fs := own[i]
		i++
		less := func(a, b textSample) int { return slices.Compare(a.vals, b.vals) }
		if !slices.IsSortedFunc(fs.samples, less) {
			slices.SortStableFunc(fs.samples, less)
		}
		typ := "gauge"
		if fs.counter {
			typ = "counter"
		}
		buf = append(buf[:0], "# HELP "...)
		buf = append(buf, fs.f.name...)
		buf = append(buf, ' ')
		buf = appendEscaped(buf, fs.f.help, false)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, fs.f.name...)
		buf = append(buf, ' ')
		buf = append(buf, typ...)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		for _, s := range fs.samples {
			buf = append(buf[:0], fs.f.name...)
			if len(s.vals) > 0 {
				buf = append(buf, '{')
				for k, v := range s.vals {
					if k > 0 {
						buf = append(buf, ',')
					}
					buf = append(buf, fs.f.names[k]...)
					buf = append(buf, '=', '"')
					buf = appendEscaped(buf, v, true)
					buf = append(buf, '"')
				}
				buf = append(buf, '}')
			}
			buf = append(buf, ' ')
			buf = appendFloat(buf, s.v)
			buf = append(buf, '\n')
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// appendEscaped escapes a HELP text (backslash, newline) or, with quote, a
// label value (also the double quote), as the text format requires.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for k := 0; k < len(s); k++ {
		switch c := s[k]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat formats v as the text format does: NaN, +Inf, -Inf, else the
// shortest representation that reads back as v ('g').
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// metricsHandler serves GET /metrics: o's series and std's (the go_* and
// process_* collectors) in the text format, gzip-compressed (fastest level)
// when the scraper accepts it, as Prometheus does.
func metricsHandler(o *Observer, std prometheus.Gatherer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		fams, err := std.Gather()
		if err != nil {
			// A failing standard collector costs its families, never the
			// mirror's own series (the library's ContinueOnError).
			fams = nil
		}
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		var out io.Writer = w
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
			defer gz.Close()
			out = gz
		}
		_ = o.writeText(out, fams)
	}
}
