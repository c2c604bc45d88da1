package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"strings"
	"time"
)

// matrixAgent is one agent's row of the matrix: its label (name and
// version) and the report `acpcheck run -json` printed for it.
type matrixAgent struct {
	Label  string
	Report Report
}

// matrixCommand writes one web page of several agents' reports: agents
// down, rules across, each cell passed, failed (linking its findings and
// their wire lines) or not brought about. It reads only the reports'
// JSON, so a matrix can be drawn from reports of any run.
func matrixCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("acpcheck matrix", "acpcheck matrix -o FILE [-date YYYY-MM-DD] LABEL=REPORT.json...", stderr)
	out := fs.String("o", "", "write the page to `FILE`")
	date := fs.String("date", time.Now().UTC().Format(time.DateOnly), "the date the reports were made, shown on the page")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *out == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "acpcheck matrix: give -o FILE and at least one LABEL=REPORT.json (the output of acpcheck run -json)")
		return 2
	}
	var agents []matrixAgent
	for _, arg := range fs.Args() {
		a, err := readMatrixAgent(arg)
		if err != nil {
			fmt.Fprintf(stderr, "acpcheck matrix: %v\n", err)
			return 2
		}
		agents = append(agents, a)
	}
	f, err := os.Create(*out)
	if err == nil {
		err = writeMatrix(f, agents, *date)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintf(stderr, "acpcheck matrix: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "acpcheck matrix: %d agents in %s\n", len(agents), *out)
	return 0
}

// readMatrixAgent reads LABEL=REPORT.json.
func readMatrixAgent(arg string) (matrixAgent, error) {
	label, file, ok := strings.Cut(arg, "=")
	if !ok || label == "" || file == "" {
		return matrixAgent{}, fmt.Errorf("%q is not LABEL=REPORT.json", arg)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return matrixAgent{}, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return matrixAgent{}, fmt.Errorf("%s is not the JSON of acpcheck run -json: %w", file, err)
	}
	if len(rep.Results) == 0 {
		return matrixAgent{}, fmt.Errorf("%s has no results: is it the JSON of acpcheck run -json?", file)
	}
	return matrixAgent{Label: label, Report: rep}, nil
}

// matrixCell is one agent's result for one rule, and where its findings'
// details are on the page.
type matrixCell struct {
	Status Status
	Anchor string
	Why    string
}

// matrixFailure is one failed cell's details: the findings and the wire
// lines they cite.
type matrixFailure struct {
	Anchor, Agent, Rule, Spec string
	Findings                  []matrixFinding
}

type matrixFinding struct {
	Detail string
	Lines  []Line
}

type matrixPage struct {
	Date     string
	Rules    []Rule
	Rows     []matrixRow
	Failures []matrixFailure
}

type matrixRow struct {
	Label string
	Cells []matrixCell
}

// writeMatrix writes the page: the rules are those of the first report,
// then any other report's, in order.
func writeMatrix(w io.Writer, agents []matrixAgent, date string) error {
	page := matrixPage{Date: date}
	seen := map[string]bool{}
	for _, a := range agents {
		for _, res := range a.Report.Results {
			if !seen[res.ID] {
				seen[res.ID] = true
				page.Rules = append(page.Rules, res.Rule)
			}
		}
	}
	for i, a := range agents {
		byID := map[string]Result{}
		for _, res := range a.Report.Results {
			byID[res.ID] = res
		}
		row := matrixRow{Label: a.Label}
		for _, rule := range page.Rules {
			res, ok := byID[rule.ID]
			cell := matrixCell{Status: res.Status, Why: res.Why}
			if !ok {
				cell = matrixCell{Status: NotBrought, Why: "this agent's acpcheck has no such rule"}
			}
			if res.Status == Fail {
				cell.Anchor = fmt.Sprintf("f%d-%s", i, rule.ID)
				page.Failures = append(page.Failures, matrixFailure{
					Anchor: cell.Anchor, Agent: a.Label, Rule: rule.ID, Spec: rule.Spec,
					Findings: citedLines(a.Report, res.Findings),
				})
			}
			row.Cells = append(row.Cells, cell)
		}
		page.Rows = append(page.Rows, row)
	}
	return matrixTemplate.Execute(w, page)
}

// citedLines pairs each finding with the wire lines it cites, from the
// wire of the connection it was on.
func citedLines(rep Report, findings []Finding) []matrixFinding {
	var out []matrixFinding
	for _, f := range findings {
		wire := rep.Wire
		if f.Protocol == 2 {
			wire = rep.WireV2
		}
		mf := matrixFinding{Detail: f.Detail}
		for _, seq := range f.Lines {
			if seq >= 1 && seq <= len(wire) {
				mf.Lines = append(mf.Lines, wire[seq-1])
			}
		}
		out = append(out, mf)
	}
	return out
}

var matrixTemplate = template.Must(template.New("matrix").Funcs(template.FuncMap{
	"word": func(s Status) string {
		switch s {
		case Pass:
			return "passed"
		case Fail:
			return "failed"
		}
		return "not brought about"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>acpcheck: agents in the field</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table.matrix { border-collapse: collapse; }
table.matrix th, table.matrix td { border: 1px solid #ccc; padding: 4px 6px; }
table.matrix thead th { writing-mode: vertical-rl; transform: rotate(180deg); text-align: left; font-weight: 500; white-space: nowrap; }
th.agent { text-align: left; white-space: nowrap; }
td.cell { text-align: center; font-size: 12px; min-width: 3.5em; }
td.pass { background: #d8f0d8; color: #145214; }
td.fail { background: #f7d0d0; color: #7a1010; font-weight: 600; }
td.not-brought-about { background: #eee; color: #777; }
td.fail a { color: inherit; }
section.failure { margin: 1.2em 0; padding: 2px 8px; }
section.failure:target { background: #fff3c4; }
pre.line { margin: 2px 0; padding: 2px 4px; background: #f6f6f6; white-space: pre-wrap; word-break: break-all; font-size: 12px; }
</style></head>
<body data-ready="1">
<h1>acpcheck: agents in the field</h1>
<p id="date">Checked on {{.Date}}. Each cell is one rule for one agent: passed, failed (click it for the findings and
their wire lines) or not brought about (the scenario could not be made to happen; hover for why).</p>
<table class="matrix">
<thead><tr><th></th>{{range .Rules}}<th class="rule" data-rule="{{.ID}}" data-tier="{{.Tier}}" title="{{.Title}}{{if .Tier}} ({{.Tier}}){{end}}">{{.ID}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr class="agent" data-agent="{{.Label}}"><th class="agent">{{.Label}}</th>{{range .Cells}}<td class="cell {{.Status}}" data-status="{{.Status}}"{{if .Why}} title="{{.Why}}"{{end}}>{{if .Anchor}}<a href="#{{.Anchor}}">{{word .Status}}</a>{{else}}{{word .Status}}{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{range .Failures}}<section class="failure" id="{{.Anchor}}" data-agent="{{.Agent}}" data-rule="{{.Rule}}">
<h2>{{.Agent}}: {{.Rule}} failed</h2>
<p><a href="{{.Spec}}">the specification</a></p>
{{range .Findings}}<div class="finding"><p class="detail">{{.Detail}}</p>
{{range .Lines}}<pre class="line" data-seq="{{.Seq}}">{{.Seq}} {{.Dir}} {{.Raw}}</pre>
{{end}}</div>
{{end}}</section>
{{end}}</body></html>
`))
