package deploy

import (
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/mirrorctl/mirrorctl/internal/metrics"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// The alert rules are checked against what mirrorctl exports, without
// promtool (not installable here): a pinned-clock internal/metrics.Observer
// plays a scenario, its /metrics exposition is scraped at the instants the
// expressions look at (now, now-15m for increase(...[15m]), now-1h for
// offset 1h), and each rule's expression is evaluated by evalRule below, a
// small evaluator of exactly the PromQL the rules file uses: a metric
// selector, optionally with offset or inside increase(m[d]) (taken as the
// difference of the two scrapes, without Prometheus's extrapolation, which
// does not change the sign that "> 0" tests), sum/max by (labels), a
// comparison with a number (a filter, as in PromQL), and "and" (label-set
// matching). An expression outside that subset fails the test, so a rule
// added later cannot pass unevaluated. A rule's "for:" only delays firing
// and is not evaluated: the test shows the condition holds.

type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// sample is one exported series: its labels (without the name) and value.
type sample struct {
	labels map[string]string
	value  float64
}

// scrapes are the exposition at instants before now (0 = now), by name.
type scrapes map[time.Duration]map[string][]sample

func scrape(t *testing.T, o *metrics.Observer) map[string][]sample {
	t.Helper()
	h, err := metrics.Handler(o)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]sample{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			ls := map[string]string{}
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out[name] = append(out[name], sample{ls, v})
		}
	}
	return out
}

func key(ls map[string]string) string {
	ks := make([]string, 0, len(ls))
	for k, v := range ls {
		ks = append(ks, k+"="+strconv.Quote(v))
	}
	sort.Strings(ks)
	return "{" + strings.Join(ks, ",") + "}"
}

var (
	reAnd  = regexp.MustCompile(`\s+and\s+`)
	reTerm = regexp.MustCompile(`^(?:(sum|max) by \(([a-z_, ]+)\) \((.+)\)|(.+?))\s*(==|>|<)\s*([0-9.]+)$`)
	reSel  = regexp.MustCompile(`^(?:increase\(([a-z_]+)\[([0-9]+[smh])\]\)|([a-z_]+)(?: offset ([0-9]+[smh]))?)$`)
)

// evalRule returns the label sets for which expr holds, or an error when
// expr is outside the subset described above.
func evalRule(expr string, sc scrapes) (map[string]map[string]string, error) {
	var result map[string]map[string]string
	for i, term := range reAnd.Split(strings.TrimSpace(expr), -1) {
		m := reTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			return nil, fmt.Errorf("term %q: not in the evaluated subset", term)
		}
		agg, by, inner := m[1], m[2], m[3]
		if agg == "" {
			inner = m[4]
		}
		vec, err := selectVector(strings.TrimSpace(inner), sc)
		if err != nil {
			return nil, err
		}
		if agg != "" {
			vec = aggregate(agg, strings.Split(by, ","), vec)
		}
		limit, _ := strconv.ParseFloat(m[6], 64)
		kept := map[string]map[string]string{}
		for _, s := range vec {
			if (m[5] == "==" && s.value == limit) || (m[5] == ">" && s.value > limit) || (m[5] == "<" && s.value < limit) {
				kept[key(s.labels)] = s.labels
			}
		}
		if i == 0 {
			result = kept
			continue
		}
		for k := range result {
			if _, ok := kept[k]; !ok {
				delete(result, k)
			}
		}
	}
	return result, nil
}

func selectVector(sel string, sc scrapes) ([]sample, error) {
	m := reSel.FindStringSubmatch(sel)
	if m == nil {
		return nil, fmt.Errorf("selector %q: not in the evaluated subset", sel)
	}
	if m[1] != "" { // increase(name[d])
		d, err := time.ParseDuration(m[2])
		if err != nil {
			return nil, err
		}
		before, ok := sc[d]
		if !ok {
			return nil, fmt.Errorf("%s: no scrape %s before now", sel, d)
		}
		was := map[string]float64{}
		for _, s := range before[m[1]] {
			was[key(s.labels)] = s.value
		}
		var out []sample
		for _, s := range sc[0][m[1]] {
			if v, ok := was[key(s.labels)]; ok {
				out = append(out, sample{s.labels, s.value - v})
			}
		}
		return out, nil
	}
	at := time.Duration(0)
	if m[4] != "" {
		d, err := time.ParseDuration(m[4])
		if err != nil {
			return nil, err
		}
		at = d
	}
	snap, ok := sc[at]
	if !ok {
		return nil, fmt.Errorf("%s: no scrape %s before now", sel, at)
	}
	return snap[m[3]], nil
}

func aggregate(op string, by []string, vec []sample) []sample {
	groups := map[string]*sample{}
	var order []string
	for _, s := range vec {
		if math.IsNaN(s.value) {
			continue
		}
		ls := map[string]string{}
		for _, b := range by {
			b = strings.TrimSpace(b)
			ls[b] = s.labels[b]
		}
		k := key(ls)
		g := groups[k]
		if g == nil {
			groups[k] = &sample{ls, s.value}
			order = append(order, k)
			continue
		}
		switch op {
		case "sum":
			g.value += s.value
		case "max":
			g.value = max(g.value, s.value)
		}
	}
	out := make([]sample, 0, len(order))
	for _, k := range order {
		out = append(out, *groups[k])
	}
	return out
}

// TestAlertRulesFire plays, on a pinned clock, a flow us-east->eu-west with
// three partitions: orders[0] copied 3 records and then stopped on a
// refused record while the source went on to 20; payments[0] lost 150
// records to retention 10 minutes ago (copying on); audit[0] is idle and
// caught up; the target eu-west has been unreachable for 3 minutes. At the
// end: MirrorPartitionStopped and MirrorNotCopying fire for orders,
// MirrorRecordRateDroppedToZero for orders (it copied an hour ago),
// MirrorRecordsSkipped for payments, MirrorClusterUnreachable for eu-west;
// nothing fires for the idle audit, nor MirrorFlowDown, the latency or
// checkpoint alerts.
func TestAlertRulesFire(t *testing.T) {
	b, err := os.ReadFile("prometheus/mirrorctl-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := start
	o := metrics.New(func() time.Time { return now })
	o.FlowState("us-east", "eu-west", true)
	orders := o.Partition("us-east", "eu-west", "us-east.orders", 0)
	payments := o.Partition("us-east", "eu-west", "us-east.payments", 0)
	audit := o.Partition("us-east", "eu-west", "us-east.audit", 0)
	audit.(replicate.PositionObserver).Position(5, 5)
	orders.Fetched(3)
	for i := int64(0); i < 3; i++ {
		orders.Polled(10, time.Second)
		orders.Acked(10, time.Second, i+1)
	}
	payments.(replicate.PositionObserver).Position(100, 100)
	sc := scrapes{}
	now = start.Add(time.Second)
	sc[time.Hour] = scrape(t, o)
	orders.(replicate.LossObserver).Loss(replicate.LossEvent{Kind: replicate.LossRefused, From: 3, To: 3, Stopped: true})
	now = start.Add(45 * time.Minute)
	sc[15*time.Minute] = scrape(t, o)
	payments.(replicate.LossObserver).Loss(replicate.LossEvent{Kind: replicate.LossGap, From: 100, To: 250, Count: 150})
	payments.(replicate.PositionObserver).Position(250, 250)
	orders.(replicate.PositionObserver).Position(3, 20) // the source went on; the stopped task did not
	o.ClusterReachable("us-east", true, start, nil)
	o.ClusterReachable("eu-west", false, start.Add(58*time.Minute), errors.New("no answer within 5s"))
	now = start.Add(time.Hour + time.Second)
	sc[0] = scrape(t, o)

	want := map[string][]string{
		"MirrorPartitionStopped":        {`{partition="0",source="us-east",target="eu-west",topic="us-east.orders"}`},
		"MirrorNotCopying":              {`{source="us-east",target="eu-west",topic="us-east.orders"}`},
		"MirrorRecordRateDroppedToZero": {`{source="us-east",target="eu-west",topic="us-east.orders"}`},
		"MirrorRecordsSkipped":          {`{partition="0",reason="gap",source="us-east",target="eu-west",topic="us-east.payments"}`},
		"MirrorClusterUnreachable":      {`{cluster="eu-west"}`},
	}
	seen := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			seen++
			got, err := evalRule(r.Expr, sc)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
				continue
			}
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if strings.Join(keys, " ") != strings.Join(want[r.Alert], " ") {
				t.Errorf("%s fires for %v, want %v", r.Alert, keys, want[r.Alert])
			}
			delete(want, r.Alert)
		}
	}
	for a := range want {
		t.Errorf("alert %s is not in the rules file", a)
	}
	if seen < 8 {
		t.Errorf("%d rules evaluated, want every rule of the file (8)", seen)
	}
	// The idle partition has its series, at 0 behind and up.
	for _, name := range []string{metrics.RecordsBehind, metrics.PartitionUp} {
		found := false
		for _, s := range sc[0][name] {
			found = found || s.labels["topic"] == "us-east.audit"
		}
		if !found {
			t.Errorf("no %s series for the idle partition", name)
		}
	}
}
