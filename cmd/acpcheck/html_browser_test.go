package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/interoptest"
)

// drawn is what the page shows, as the browser laid it out.
type drawn struct {
	Ready, Error string
	Summary      []string
	Cards        []struct{ Rule, Text, Spec string }
	Rules        []struct{ Rule, Status string }
	Timelines    []struct {
		Proto int
		Rows  []drawnRow
	}
}

type drawnRow struct {
	ID, Cls, Label         string
	Head, Track, Bar, Wire box
	Cancels, FindingMarks  []box
	Tags                   []string
	Lines                  []drawnLine
}

type drawnLine struct {
	ID      string
	Cited   bool
	Raw     string
	Visible bool
}

type box struct{ X, Y, W, H float64 }

func (b box) shown() bool { return b.W > 0 && b.H > 0 }

// within reports whether b lies inside o, left to right.
func (b box) within(o box) bool { return b.X >= o.X-1 && b.X+b.W <= o.X+o.W+1 }

// describe reads the page's layout: every count, card, rule and timeline
// row, with the boxes the browser drew them in.
const describe = `(() => {
  const box = el => { if (!el) return {X:0,Y:0,W:0,H:0}; const r = el.getBoundingClientRect(); return {X:r.x,Y:r.y,W:r.width,H:r.height}; };
  const all = (root, sel) => Array.from(root.querySelectorAll(sel));
  return {
    Ready: document.body.dataset.ready, Error: document.body.dataset.error || "",
    Summary: all(document, "#summary .count b").map(b => b.textContent),
    Cards: all(document, ".finding-card").map(c => ({Rule: c.dataset.rule, Text: c.textContent, Spec: c.querySelector("a").href})),
    Rules: all(document, "tr.rule").map(r => ({Rule: r.dataset.rule, Status: r.dataset.status})),
    Timelines: all(document, "ol.timeline").map(ol => ({Proto: +ol.dataset.proto, Rows: Array.from(ol.children).map(li => ({
      ID: li.id, Cls: li.className, Label: li.querySelector(".label").textContent,
      Head: box(li.querySelector(".head")), Track: box(li.querySelector(".track")), Bar: box(li.querySelector(".bar")),
      Wire: box(li.querySelector(".wire")),
      Cancels: all(li, ".cancel-mark").map(box), FindingMarks: all(li, ".finding-mark").map(box),
      Tags: all(li, ".tag").map(t => t.textContent),
      Lines: all(li, ".wire tr").map(tr => ({ID: tr.id, Cited: tr.classList.contains("cited"),
        Raw: tr.querySelector(".raw").textContent, Visible: tr.getBoundingClientRect().height > 0})),
    }))})),
  };
})()`

// browser opens pages in a headless Chromium, one tab, until the test
// ends.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	chromium := interoptest.RequireChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.WindowSize(1400, 1000))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses to run as root
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel(); cancel() })
	return &browser{t: t, ctx: bctx}
}

// open loads the page and waits for its script to have run.
func (b *browser) open(path string) {
	_, err := chromedp.Run(b.ctx, chromedp.Navigate("file://"+path))
	require.NoError(b.t, err)
	ready, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.dataset.ready`))
	require.NoError(b.t, err)
	errText, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.dataset.error || ""`))
	require.Equal(b.t, "1", ready, "the page's script did not finish: %s", errText)
}

func (b *browser) read() drawn {
	d, err := chromedp.Run(b.ctx, chromedp.Evaluate[drawn](describe))
	require.NoError(b.t, err)
	require.Empty(b.t, d.Error, "the page's script failed")
	return d
}

func (b *browser) click(sel string) {
	_, err := chromedp.Run(b.ctx, chromedp.Click(sel))
	require.NoError(b.t, err, "clicking %s", sel)
}

// rowWith returns the row that holds the wire line lineID.
func rowWith(t *testing.T, rows []drawnRow, lineID string) drawnRow {
	for _, r := range rows {
		for _, l := range r.Lines {
			if l.ID == lineID {
				return r
			}
		}
	}
	t.Fatalf("no row holds %s", lineID)
	return drawnRow{}
}

// The page of a run whose agent answers cancelled prompts with an error,
// in Chromium: the counts and cards of what failed, every rule, and a
// timeline with a row per request holding every wire line once; the
// prompt cancelled by session/cancel is marked cancelled and failing, its
// marks drawn on its track; its wire lines are hidden until its row is
// clicked, and then drawn, the cited ones marked; a finding's link opens
// the row of its line.
func TestHTMLReportInBrowser(t *testing.T) {
	b := newBrowser(t)
	rep, err := runChecks(context.Background(), testOptions(t, faultCancelError))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, writeHTMLFile(path, rep))
	b.open(path)
	d := b.read()

	v := rep.pageView()
	assert.Equal(t, []string{strconv.Itoa(v.Pass), strconv.Itoa(v.Fail), strconv.Itoa(v.Brought)}, d.Summary)
	require.Len(t, d.Rules, len(allRules))
	for i, r := range rep.Results {
		assert.Equal(t, r.ID, d.Rules[i].Rule)
		assert.Equal(t, string(r.Status), d.Rules[i].Status, r.ID)
	}
	var cards []string
	for _, c := range d.Cards {
		cards = append(cards, c.Rule)
	}
	assert.ElementsMatch(t, []string{ruleCancelStop.ID, ruleCancelRequest.ID, ruleSessionClose.ID, ruleCancelMeta.ID}, cards) // every cancel ends in its error

	require.Len(t, d.Timelines, 2, "the v1 and the v2 connection")
	for i, wire := range [][]Line{rep.Wire, rep.WireV2} {
		tl := d.Timelines[i]
		assert.Equal(t, i+1, tl.Proto)
		assert.Len(t, tl.Rows, len(timeline(wire)))
		var seen []string
		for _, r := range tl.Rows {
			assert.True(t, r.Head.shown(), "row %s is drawn", r.ID)
			assert.True(t, r.Bar.shown() && r.Bar.within(r.Track), "row %s: its bar %+v lies on its track %+v", r.ID, r.Bar, r.Track)
			assert.Zero(t, r.Wire.H, "row %s is closed", r.ID)
			for _, l := range r.Lines {
				seen = append(seen, l.ID)
				assert.False(t, l.Visible, "%s is hidden in a closed row", l.ID)
			}
		}
		var want []string
		for _, l := range wire {
			want = append(want, lineAnchor(i+1, l.Seq))
		}
		assert.ElementsMatch(t, want, seen, "every wire line is in exactly one row")
	}

	// The prompt cancelled with session/cancel: [prompt, cancel, answer].
	finding := rep.result(ruleCancelStop.ID).Findings[0]
	require.Len(t, finding.Lines, 3)
	prompt := rowWith(t, d.Timelines[0].Rows, lineAnchor(1, finding.Lines[0]))
	assert.Contains(t, prompt.Label, "session/prompt")
	assert.Contains(t, prompt.Cls, "cancelled")
	assert.Contains(t, prompt.Cls, "finding")
	assert.Contains(t, prompt.Tags, "cancelled by session/cancel")
	assert.Contains(t, prompt.Tags, ruleCancelStop.ID)
	require.Len(t, prompt.Cancels, 1)
	assert.True(t, prompt.Cancels[0].shown() && prompt.Cancels[0].within(prompt.Track), "the cancel mark %+v on the track %+v", prompt.Cancels[0], prompt.Track)
	assert.GreaterOrEqual(t, prompt.Cancels[0].X, prompt.Bar.X-3, "the cancel comes while the prompt is open")
	require.NotEmpty(t, prompt.FindingMarks)
	for _, m := range prompt.FindingMarks {
		assert.True(t, m.shown() && m.within(prompt.Track), "a finding mark %+v on the track %+v", m, prompt.Track)
	}

	b.click("#" + prompt.ID + " .head")
	opened := rowWith(t, b.read().Timelines[0].Rows, lineAnchor(1, finding.Lines[0]))
	assert.Greater(t, opened.Wire.H, 0.0, "the row opened")
	var cited []int
	for _, l := range opened.Lines {
		assert.True(t, l.Visible, "%s is drawn in the opened row", l.ID)
		seq, _ := strconv.Atoi(l.ID[strings.LastIndex(l.ID, "-")+1:])
		assert.Equal(t, shownRaw(rep.Wire[seq-1]), l.Raw, "%s shows the line as it was on the wire", l.ID)
		if l.Cited {
			cited = append(cited, seq)
		}
	}
	for _, seq := range finding.Lines {
		assert.True(t, slices.Contains(cited, seq), "line %d, which the finding cites, is marked", seq)
	}
	b.click("#" + prompt.ID + " .head")
	closed := rowWith(t, b.read().Timelines[0].Rows, lineAnchor(1, finding.Lines[0]))
	assert.Zero(t, closed.Wire.H, "a second click closes the row")

	// The finding of $/cancel_request: its link opens the row of its line.
	reqFinding := rep.result(ruleCancelRequest.ID).Findings[0]
	b.click(`.finding-card[data-rule="cancel-request"] a.line-link`)
	target := rowWith(t, b.read().Timelines[0].Rows, lineAnchor(1, reqFinding.Lines[0]))
	assert.Greater(t, target.Wire.H, 0.0, "the link opened the row of line %d", reqFinding.Lines[0])
	assert.Contains(t, target.Tags, "cancelled by $/cancel_request")
}

// The page of the recorded conversation with codex-acp: the prompt
// cancelled twice carries both cancels on its track, and the answer to the
// $/cancel_request notification is a row of its own, marked with the rule
// it breaks, which opens to the answer as it was on the wire.
func TestHTMLReplayInBrowser(t *testing.T) {
	b := newBrowser(t)
	rep := replayFile(t, codexRecording)
	path := filepath.Join(t.TempDir(), "replay.html")
	require.NoError(t, writeHTMLFile(path, rep))
	b.open(path)
	d := b.read()
	require.Len(t, d.Timelines, 1)
	rows := d.Timelines[0].Rows
	assert.Len(t, rows, len(timeline(rep.Wire)))
	require.Len(t, d.Cards, 2) // its answer without an id member breaks answer-envelope too
	assert.Equal(t, ruleNoteUnanswered.ID, d.Cards[0].Rule)
	assert.Equal(t, ruleNoteUnanswered.Spec, d.Cards[0].Spec)

	f := rep.result(ruleNoteUnanswered.ID).Findings[0]
	prompt := rowWith(t, rows, lineAnchor(1, f.Lines[0]))
	assert.Contains(t, prompt.Label, "session/prompt")
	assert.Contains(t, prompt.Tags, "cancelled by $/cancel_request and session/cancel")
	require.Len(t, prompt.Cancels, 2)
	for _, c := range prompt.Cancels {
		assert.True(t, c.shown() && c.within(prompt.Track), "a cancel mark %+v on the track %+v", c, prompt.Track)
	}
	assert.Less(t, prompt.Cancels[0].X, prompt.Cancels[1].X, "$/cancel_request came first")

	answer := rowWith(t, rows, lineAnchor(1, f.Lines[1]))
	assert.Equal(t, "answer without an ID", answer.Label)
	assert.Contains(t, answer.Cls, "finding")
	assert.Contains(t, answer.Tags, ruleNoteUnanswered.ID)
	b.click("#" + answer.ID + " .head")
	opened := rowWith(t, b.read().Timelines[0].Rows, lineAnchor(1, f.Lines[1]))
	require.Len(t, opened.Lines, 1)
	assert.True(t, opened.Lines[0].Visible && opened.Lines[0].Cited)
	assert.Equal(t, rep.Wire[f.Lines[1]-1].Raw, opened.Lines[0].Raw)
}
