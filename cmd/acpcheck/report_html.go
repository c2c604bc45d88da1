package main

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// The page is one file that needs nothing else: its style and its script
// are in it, and it loads nothing from the network.
//
//go:embed report.html.tmpl
var pageTemplate string

var page = template.Must(template.New("report").Parse(pageTemplate))

// writeHTMLFile writes the report as a web page to path.
func writeHTMLFile(path string, rep *Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteHTML(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteHTML writes the report as one self-contained web page, for people
// who may never have heard of acpcheck: what was checked and what failed,
// each finding with its rule and the page of the specification it comes
// from, and each connection as a timeline, a row per request from its start
// to its answer, cancels and findings marked, each row opening to show its
// wire lines.
func (rep *Report) WriteHTML(w io.Writer) error {
	return page.Execute(w, rep.pageView())
}

// pageView is what the page shows, ready to lay out.
type pageView struct {
	Subject  string
	Replay   bool
	Pass     int
	Fail     int
	Brought  int // not brought about
	Failed   []ruleView
	Rules    []ruleView
	Conns    []connView
	ExitCode int
	Stderr   string
}

type ruleView struct {
	ID, Title, Spec string
	Tier            Tier   // MUST, SHOULD or MAY
	Kit             string // the conformance kit's IDs, comma-separated
	Status          string // pass, fail, not-brought-about
	Label           string // what the status means, in words
	Why             string
	Findings        []findingView
}

type findingView struct {
	Detail string
	Lines  []lineRef
}

// lineRef points at one wire line of the page.
type lineRef struct {
	Anchor string
	Text   string
}

type connView struct {
	Proto int
	Title string
	Ticks []tickView
	Rows  []rowView
}

type tickView struct {
	Style template.CSS
	Text  string
}

type rowView struct {
	Anchor    string
	Class     string
	Who       string
	Label     string
	Bar       template.CSS
	Cancels   []markView
	Findings  []markView
	Outcome   string
	Took      string
	Rules     []string
	Lines     []lineView
	Cancelled string // what cancelled it, in words, or ""
}

type markView struct {
	Style template.CSS
	Title string
}

type lineView struct {
	Anchor string
	Seq    int
	Time   string
	Who    string
	Label  string
	Raw    string
	Cited  bool
}

// outcomeWords say what each outcome means, in words.
var outcomeWords = map[string]string{string(Pass): "passed", string(Fail): "failed", "warn": "failed, reported only (a SHOULD)",
	"recorded": "not done, recorded only (a MAY)", string(NotBrought): "not brought about"}

func (rep *Report) pageView() pageView {
	v := pageView{Subject: rep.subject(), Replay: rep.Recording != "", ExitCode: rep.ExitCode(), Stderr: rep.Stderr}
	cited := map[int]map[int][]string{1: {}, 2: {}} // protocol → line → the rules citing it
	for _, r := range rep.Results {
		rv := ruleView{ID: r.ID, Title: r.Title, Spec: r.Spec, Tier: r.Tier, Kit: strings.Join(r.Kit, ", "), Status: string(r.Status), Label: outcomeWords[r.Outcome()], Why: r.Why}
		for _, f := range r.Findings {
			fv := findingView{Detail: f.Detail}
			for _, seq := range f.Lines {
				if !slices.Contains(cited[f.Protocol][seq], r.ID) {
					cited[f.Protocol][seq] = append(cited[f.Protocol][seq], r.ID)
				}
				if l, ok := rep.line(f.Protocol, seq); ok {
					fv.Lines = append(fv.Lines, lineRef{Anchor: lineAnchor(f.Protocol, seq), Text: fmt.Sprintf("#%d %s %s", seq, arrow(l.Dir), label(l))})
				}
			}
			rv.Findings = append(rv.Findings, fv)
		}
		switch r.Status {
		case Pass:
			v.Pass++
		case Fail:
			v.Fail++
			v.Failed = append(v.Failed, rv)
		default:
			v.Brought++
		}
		v.Rules = append(v.Rules, rv)
	}
	for _, c := range []struct {
		proto int
		wire  []Line
	}{{1, rep.Wire}, {2, rep.WireV2}} {
		if len(c.wire) > 0 {
			v.Conns = append(v.Conns, connectionView(c.proto, c.wire, cited[c.proto]))
		}
	}
	return v
}

func lineAnchor(proto, seq int) string { return fmt.Sprintf("v%d-line-%d", proto, seq) }

// connectionView lays one connection out on a time axis from its first
// line to its last.
func connectionView(proto int, wire []Line, cited map[int][]string) connView {
	c := connView{Proto: proto, Title: fmt.Sprintf("The conversation over ACP v%d", proto)}
	start, end := wire[0].Ms, wire[0].Ms
	for _, l := range wire {
		start, end = math.Min(start, l.Ms), math.Max(end, l.Ms)
	}
	span := math.Max(end-start, 1)
	at := func(ms float64) float64 { return 100 * (ms - start) / span }
	for _, t := range ticks(span) {
		c.Ticks = append(c.Ticks, tickView{Style: template.CSS(fmt.Sprintf("left:%.3f%%", at(start+t))), Text: duration(t)})
	}
	for i, r := range timeline(wire) {
		c.Rows = append(c.Rows, rowOf(proto, i, r, cited, axis{at: at, end: end}))
	}
	return c
}

// axis places times on a connection's track: at is how far along a time
// is, in percent, and end the time of the connection's last line.
type axis struct {
	at  func(ms float64) float64
	end float64
}

func rowOf(proto, i int, r *row, cited map[int][]string, ax axis) rowView {
	rv := rowView{
		Anchor:  fmt.Sprintf("v%d-row-%d", proto, i+1),
		Who:     arrow(r.first.Dir),
		Label:   label(r.first),
		Outcome: r.outcome(),
	}
	classes := append([]string{"row"}, rv.drawBar(r, ax)...)
	if rv.markCancels(r, ax) {
		classes = append(classes, "cancelled")
	}
	if rv.addLines(proto, r, cited, ax) {
		classes = append(classes, "finding")
	}
	rv.Class = strings.Join(classes, " ")
	return rv
}

// drawBar draws a request's bar from its start to its answer (to the end,
// if none came), or a single line's dot, and returns the row's classes.
func (rv *rowView) drawBar(r *row, ax axis) []string {
	if !r.isRequest() {
		rv.Bar = centredAt(ax.at(r.first.Ms), ".25rem")
		return []string{"single"}
	}
	classes := []string{"request"}
	stop := ax.end
	if r.answer.Seq != 0 {
		stop = r.answer.Ms
		rv.Took = "after " + duration(stop-r.first.Ms)
	} else {
		classes = append(classes, "unanswered")
	}
	// At least 3px wide, and never past the track's end.
	rv.Bar = template.CSS(fmt.Sprintf("left:min(%.3f%%,calc(100%% - 3px));width:%.3f%%", ax.at(r.first.Ms), ax.at(stop)-ax.at(r.first.Ms)))
	return classes
}

// markCancels puts a tick on the bar for each cancel of the request, and
// reports whether there was any.
func (rv *rowView) markCancels(r *row, ax axis) bool {
	var by []string
	for _, l := range r.cancels {
		rv.Cancels = append(rv.Cancels, markView{
			Style: centredAt(ax.at(l.Ms), "2px"),
			Title: fmt.Sprintf("%s at %s (#%d)", l.msg.Method, duration(l.Ms), l.Seq),
		})
		by = append(by, l.msg.Method)
	}
	if len(by) == 0 {
		return false
	}
	rv.Cancelled = "cancelled by " + strings.Join(slices.Compact(by), " and ")
	return true
}

// addLines lists the row's wire lines, marking those a finding cites and
// their rules, and reports whether any is cited.
func (rv *rowView) addLines(proto int, r *row, cited map[int][]string, ax axis) bool {
	for _, l := range r.lines {
		lv := lineView{Anchor: lineAnchor(proto, l.Seq), Seq: l.Seq, Time: duration(l.Ms), Who: arrow(l.Dir), Label: label(l), Raw: shownRaw(l)}
		if rules := cited[l.Seq]; len(rules) > 0 {
			lv.Cited = true
			for _, id := range rules {
				if !slices.Contains(rv.Rules, id) {
					rv.Rules = append(rv.Rules, id)
				}
			}
			rv.Findings = append(rv.Findings, markView{
				Style: centredAt(ax.at(l.Ms), ".4rem"),
				Title: fmt.Sprintf("#%d breaks %s", l.Seq, strings.Join(rules, ", ")),
			})
		}
		rv.Lines = append(rv.Lines, lv)
	}
	return len(rv.Rules) > 0
}

// centredAt places a mark whose centre is pct of the way along its track,
// and which is half wide on either side, wholly on the track.
func centredAt(pct float64, half string) template.CSS {
	return template.CSS(fmt.Sprintf("left:clamp(%s,%.3f%%,calc(100%% - %s))", half, pct, half))
}

// maxPageLine is how much of one wire line the page shows.
const maxPageLine = 8 << 10

// shownRaw is a line as the page shows it: its text, cut if it is long,
// or, for bytes that are not UTF-8, their count.
func shownRaw(l Line) string {
	if l.Base64 != nil {
		return fmt.Sprintf("(%d bytes that are not UTF-8: %q)", len(l.Base64), l.Base64[:min(len(l.Base64), 200)])
	}
	raw := string(l.bytes())
	if len(raw) <= maxPageLine {
		return raw
	}
	return raw[:maxPageLine] + fmt.Sprintf("… (%d bytes in all)", len(raw))
}

// duration writes milliseconds the way people read them.
func duration(ms float64) string {
	switch {
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 60000:
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%d min %.0f s", int(ms/60000), math.Mod(ms, 60000)/1000)
}

// ticks are the times, from 0, of a few round marks across span ms.
func ticks(span float64) []float64 {
	step := math.Pow(10, math.Floor(math.Log10(span/5)))
	for _, f := range []float64{1, 2, 5, 10} {
		if span/(step*f) <= 6 {
			step *= f
			break
		}
	}
	var out []float64
	for t := 0.0; t <= span; t += step {
		out = append(out, t)
	}
	return out
}
