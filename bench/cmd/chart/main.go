// Command chart draws the round-trip and cancel-latency figures of a
// benchmark run as one SVG file, with no tools beyond the standard library.
//
//	chart -in results -out results/chart.svg
//
// It reads gobench.txt (go test -bench output, any -count), stdio.json and
// cancel.json from -in; a missing input leaves its bars out.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type series struct {
	name  string
	color string
}

type group struct {
	label  string
	values []float64 // one per series; NaN = missing
}

type panel struct {
	title  string
	unit   string
	series []series
	groups []group
}

var peerOrder = []string{"acprpc", "coder", "jrpc2", "lsp", "sourcegraph", "xexp", "echo", "handoff", "ts"}

func main() {
	in := flag.String("in", "results", "directory with gobench.txt, stdio.json, cancel.json")
	out := flag.String("out", "results/chart.svg", "SVG file to write")
	flag.Parse()

	inproc := goBenchMedians(filepath.Join(*in, "gobench.txt"), "BenchmarkRoundTrip")
	var stdio []struct {
		Row    string  `json:"row"`
		SeqMed float64 `json:"seqMedian"`
	}
	readJSON(filepath.Join(*in, "stdio.json"), &stdio)
	var cancel []struct {
		Row    string `json:"row"`
		Answer struct {
			P50 float64 `json:"p50us"`
			P99 float64 `json:"p99us"`
		} `json:"answer"`
		Skipped string `json:"skipped"`
	}
	readJSON(filepath.Join(*in, "cancel.json"), &cancel)

	rt := panel{
		title:  "Sequential round trip, session/prompt (µs, lower is better)",
		unit:   "µs",
		series: []series{{"in process, os.Pipe", "#4e79a7"}, {"across processes, stdio", "#f28e2b"}},
	}
	for _, p := range peerOrder {
		g := group{label: p, values: []float64{math.NaN(), math.NaN()}}
		if v, ok := inproc[p]; ok {
			g.values[0] = v / 1e3
		}
		for _, s := range stdio {
			if s.Row == p && s.SeqMed > 0 {
				g.values[1] = 1e6 / s.SeqMed
			}
		}
		if !math.IsNaN(g.values[0]) || !math.IsNaN(g.values[1]) {
			rt.groups = append(rt.groups, g)
		}
	}
	cl := panel{
		title:  "Cancel latency over stdio, until the cancelled answer is back (µs, lower is better)",
		unit:   "µs",
		series: []series{{"p50", "#59a14f"}, {"p99", "#e15759"}},
	}
	for _, p := range peerOrder {
		for _, c := range cancel {
			if c.Row == p && c.Skipped == "" {
				cl.groups = append(cl.groups, group{label: p, values: []float64{c.Answer.P50, c.Answer.P99}})
			}
		}
	}
	svg := render([]panel{rt, cl})
	if err := os.WriteFile(*out, []byte(svg), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func readJSON(path string, v any) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if err := json.Unmarshal(b, v); err != nil {
		fmt.Fprintf(os.Stderr, "chart: %s: %v\n", path, err)
	}
}

// goBenchMedians returns the median ns/op per peer of benchmark name.
func goBenchMedians(path, name string) map[string]float64 {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `/peer=([\w.-]+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)
	samples := map[string][]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			samples[m[1]] = append(samples[m[1]], v)
		}
	}
	out := map[string]float64{}
	for k, v := range samples {
		sort.Float64s(v)
		if len(v)%2 == 1 {
			out[k] = v[len(v)/2]
		} else {
			out[k] = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
	}
	return out
}

const (
	width     = 900
	labelW    = 110
	rightPad  = 90
	barH      = 14
	groupGap  = 10
	titleH    = 48
	panelGap  = 24
	axisTicks = 5
)

func render(panels []panel) string {
	var b strings.Builder
	height := 0
	for _, p := range panels {
		height += panelHeight(p) + panelGap
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	y := 0
	for _, p := range panels {
		drawPanel(&b, p, y)
		y += panelHeight(p) + panelGap
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func panelHeight(p panel) int {
	per := len(p.series)*barH + groupGap
	return titleH + len(p.groups)*per + 24
}

func drawPanel(b *strings.Builder, p panel, y0 int) {
	fmt.Fprintf(b, `<text x="10" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", y0+18, html.EscapeString(p.title))
	// Legend.
	lx := labelW
	for _, s := range p.series {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`, lx, y0+28, s.color)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", lx+16, y0+38, html.EscapeString(s.name))
		lx += 22 + 7*len(s.name) + 20
	}
	max := 0.0
	for _, g := range p.groups {
		for _, v := range g.values {
			if !math.IsNaN(v) && v > max {
				max = v
			}
		}
	}
	if max == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d">no data</text>`+"\n", labelW, y0+titleH+14)
		return
	}
	max = niceCeil(max)
	plotW := float64(width - labelW - rightPad)
	top := y0 + titleH
	bottom := top + len(p.groups)*(len(p.series)*barH+groupGap)
	for i := 0; i <= axisTicks; i++ {
		v := max * float64(i) / axisTicks
		x := float64(labelW) + plotW*float64(i)/axisTicks
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`, x, top-4, x, bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555555">%s</text>`+"\n", x, bottom+14, fmtNum(v))
	}
	y := top
	for _, g := range p.groups {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-8, y+len(p.series)*barH/2+4, html.EscapeString(g.label))
		for i, v := range g.values {
			if !math.IsNaN(v) {
				w := plotW * v / max
				fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelW, y, w, barH-2, p.series[i].color)
				fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#333333">%s %s</text>`+"\n", float64(labelW)+w+4, y+barH-3, fmtNum(v), p.unit)
			}
			y += barH
		}
		y += groupGap
	}
}

func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	switch {
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
