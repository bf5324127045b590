package main

import (
	"fmt"
	"math"
	"strings"
)

// series is one line of a panel: its name, colour and points (x, y).
type series struct {
	name, colour string
	x, y         []float64
}

// plot draws two panels as SVG: milliseconds per 1,000 partitions of the
// copying and the idle --once, and peak RSS MiB per 1,000 partitions, each
// against the partition count on a log axis. A flat line is cost that
// grows with the work alone.
func plot(parts, eos []partRow) string {
	per := func(rows []partRow, f func(partRow) float64) ([]float64, []float64) {
		var xs, ys []float64
		for _, r := range rows {
			if r.copy.exit != 0 {
				continue // a failed run has no cost to plot
			}
			xs = append(xs, float64(r.partitions))
			ys = append(ys, f(r)/(float64(r.partitions)/1000))
		}
		return xs, ys
	}
	ms := func(r partRow) float64 { return float64(r.copy.usage.Wall.Milliseconds()) }
	idle := func(r partRow) float64 { return float64(r.idle.usage.Wall.Milliseconds()) }
	rss := func(r partRow) float64 { return float64(r.copy.usage.PeakRSSKiB) / 1024 }
	var left, right []series
	add := func(to *[]series, name, colour string, rows []partRow, f func(partRow) float64) {
		if x, y := per(rows, f); len(x) > 0 {
			*to = append(*to, series{name, colour, x, y})
		}
	}
	add(&left, "at-least-once --once", "#1f77b4", parts, ms)
	add(&left, "idle --once", "#2ca02c", parts, idle)
	add(&left, "exactly-once --once", "#d62728", eos, ms)
	add(&right, "at-least-once", "#1f77b4", parts, rss)
	add(&right, "exactly-once", "#d62728", eos, rss)
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="960" height="400" font-family="sans-serif" font-size="12">` + "\n")
	b.WriteString(`<rect width="960" height="400" fill="white"/>` + "\n")
	panel(&b, 0, "ms per 1,000 partitions", left)
	panel(&b, 480, "peak RSS MiB per 1,000 partitions", right)
	b.WriteString("</svg>\n")
	return b.String()
}

// panel draws one panel at horizontal offset x0: axes, ticks, the series
// and their legend.
func panel(b *strings.Builder, x0 float64, title string, ss []series) {
	const left, top, w, h = 60.0, 40.0, 380.0, 290.0
	fmt.Fprintf(b, `<text x="%.0f" y="20" font-size="14">%s</text>`+"\n", x0+left, title)
	if len(ss) == 0 {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f">no measurement</text>`+"\n", x0+left+20, top+h/2)
		return
	}
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for i := range s.x {
			minX, maxX, maxY = math.Min(minX, s.x[i]), math.Max(maxX, s.x[i]), math.Max(maxY, s.y[i])
		}
	}
	lx0, lx1 := math.Floor(math.Log10(minX)), math.Ceil(math.Log10(maxX))
	if lx1 == lx0 {
		lx1++
	}
	maxY = niceCeil(maxY)
	px := func(x float64) float64 { return x0 + left + (math.Log10(x)-lx0)/(lx1-lx0)*w }
	py := func(y float64) float64 { return top + h - y/maxY*h }
	fmt.Fprintf(b, `<path d="M%.1f %.1f V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", x0+left, top, top+h, x0+left+w)
	for e := lx0; e <= lx1; e++ {
		x := px(math.Pow(10, e))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
			x, top, x, top+h, x, top+h+16, fmtCount(math.Pow(10, e)))
	}
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%g</text>`+"\n",
			x0+left, py(y), x0+left+w, py(y), x0+left-4, py(y)+4, y)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">partitions (log)</text>`+"\n", x0+left+w/2, top+h+34)
	for i, s := range ss {
		var pts []string
		for j := range s.x {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.x[j]), py(s.y[j])))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(s.x[j]), py(s.y[j]), s.colour)
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), s.colour)
		ly := top + 14 + float64(i)*16
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			x0+left+w-150, ly-4, x0+left+w-130, ly-4, s.colour, x0+left+w-125, ly, s.name)
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtCount(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%gk", v/1000)
	}
	return fmt.Sprintf("%g", v)
}
