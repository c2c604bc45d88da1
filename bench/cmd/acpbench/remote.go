package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acpkit/acprpc/bench/remotebench"
)

// remoteRow is one server over one transport.
type remoteRow struct{ server, transport string }

func (r remoteRow) String() string { return r.server + " " + r.transport }

// remoteRun is one Run of one row, in a fresh server process.
type remoteRun struct {
	Server string `json:"server"`
	remotebench.Result
}

// runRemote runs every row runs times, interleaved (a change in the
// machine's load falls on every row alike), each in a fresh server.
func runRemote(cfg *config, rows []remoteRow, remoteServer string, rc remotebench.Config, runs int) error {
	var results []remoteRun
	for i := range runs {
		for _, r := range rows {
			fmt.Printf("run %d/%d: %s\n", i+1, runs, r)
			res, err := remoteOne(cfg, r, remoteServer, rc)
			if err != nil {
				res.Error = err.Error()
				fmt.Printf("  %s: %v\n", r, err)
			}
			results = append(results, res)
		}
	}
	return writeResults(cfg, "remote", results, remoteTable(results, rows, rc))
}

func remoteOne(cfg *config, r remoteRow, remoteServer string, rc remotebench.Config) (remoteRun, error) {
	run := remoteRun{Server: r.server}
	run.Transport = r.transport
	var srv *remotebench.Server
	var err error
	switch r.server {
	case "acprpc":
		srv, err = remotebench.Start("", remoteServer)
	case "ts":
		srv, err = remotebench.Start(cfg.tsDir, cfg.node, "remote-agent.mjs")
	default:
		err = fmt.Errorf("unknown server %q (acprpc or ts)", r.server)
	}
	if err != nil {
		return run, err
	}
	defer srv.Stop()
	rc.URL, rc.Transport, rc.PID = srv.URL, r.transport, srv.PID()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run.Result, err = remotebench.Run(ctx, rc)
	return run, err
}

func parseRemoteRows(s string) ([]remoteRow, error) {
	var rows []remoteRow
	for _, f := range strings.Split(s, ",") {
		server, transport, ok := strings.Cut(strings.TrimSpace(f), ":")
		if !ok || (transport != remotebench.WebSocket && transport != remotebench.HTTP) {
			return nil, fmt.Errorf("row %q: want server:ws or server:http", f)
		}
		rows = append(rows, remoteRow{server, transport})
	}
	return rows, nil
}

// remoteColumn is one figure of the table, with its format.
type remoteColumn struct {
	format string
	of     func(remotebench.Result) float64
}

var remoteColumns = []remoteColumn{
	{"%.0f", func(x remotebench.Result) float64 { return x.TurnsPerSec1 }},
	{"%.0f", func(x remotebench.Result) float64 { return x.TurnsPerSecN }},
	{"%.0f", func(x remotebench.Result) float64 { return x.ServerCPUUs1 }},
	{"%.0f", func(x remotebench.Result) float64 { return x.ServerCPUUsN }},
	{"%.0f", func(x remotebench.Result) float64 { return x.CancelP50Us }},
	{"%.0f", func(x remotebench.Result) float64 { return x.CancelP99Us }},
	{"%.1f", func(x remotebench.Result) float64 { return x.IdleKiBPerConn }},
	{"%.1f", func(x remotebench.Result) float64 { return x.TurnKiBPerConn }},
	{"%.1f", func(x remotebench.Result) float64 { return x.CancelAllMs }},
}

// remoteTable gives each row's medians over its runs (with their range),
// then the goals' ratios.
func remoteTable(results []remoteRun, rows []remoteRow, rc remotebench.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "remote: %d connections; turns/s phases of %v; %d cancels one at a time; medians of the runs (min–max)\n\n",
		rc.Conns, rc.Duration, rc.Cancels)
	fmt.Fprintf(&b, "| server | transport | turns/s, 1 conn | turns/s, %d conns | server CPU µs/turn, 1 conn | the same, %d conns | cancel p50 µs | cancel p99 µs | KiB/conn idle | KiB/conn mid-turn | %d turns cancelled at once, ms | runs |\n", rc.Conns, rc.Conns, rc.Conns)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	med := map[remoteRow][]float64{}
	for _, r := range rows {
		var ok []remotebench.Result
		failed := 0
		for _, res := range results {
			switch {
			case res.Server != r.server || res.Transport != r.transport:
			case res.Error != "":
				failed++
			default:
				ok = append(ok, res.Result)
			}
		}
		fmt.Fprintf(&b, "| %s | %s |", r.server, r.transport)
		for _, col := range remoteColumns {
			vals := make([]float64, len(ok))
			for i, x := range ok {
				vals[i] = col.of(x)
			}
			if len(vals) == 0 {
				b.WriteString(" – |")
				continue
			}
			m := median(vals)
			med[r] = append(med[r], m)
			f := col.format
			fmt.Fprintf(&b, " "+f+" ("+f+"–"+f+") |", m, slices.Min(vals), slices.Max(vals))
		}
		fmt.Fprintf(&b, " %d", len(ok))
		if failed > 0 {
			fmt.Fprintf(&b, " (+%d failed)", failed)
		}
		b.WriteString(" |\n")
	}
	b.WriteString("\n")
	for _, t := range []string{remotebench.WebSocket, remotebench.HTTP} {
		a, ts := med[remoteRow{"acprpc", t}], med[remoteRow{"ts", t}]
		if len(a) == len(remoteColumns) && len(ts) == len(remoteColumns) {
			fmt.Fprintf(&b, "acprpc against ts over %s (medians): turns/s %.2fx at 1 conn, %.2fx at %d conns; server CPU per turn %.2fx, %.2fx; the time of the cancel answer %.2fx at p50, %.2fx at p99; memory %.2fx idle, %.2fx mid-turn; the time of the cancel-all %.2fx\n",
				t, over(a[0], ts[0]), over(a[1], ts[1]), rc.Conns, over(a[2], ts[2]), over(a[3], ts[3]),
				over(a[4], ts[4]), over(a[5], ts[5]), over(a[6], ts[6]), over(a[7], ts[7]), over(a[8], ts[8]))
		}
	}
	for _, s := range []string{"acprpc", "ts"} {
		ws, h := med[remoteRow{s, remotebench.WebSocket}], med[remoteRow{s, remotebench.HTTP}]
		if len(ws) == len(remoteColumns) && len(h) == len(remoteColumns) {
			fmt.Fprintf(&b, "%s: a Streamable HTTP turn takes %.2fx the time of a WebSocket turn at 1 conn, %.2fx at %d conns; %.2fx and %.2fx its server CPU\n",
				s, over(ws[0], h[0]), over(ws[1], h[1]), rc.Conns, over(h[2], ws[2]), over(h[3], ws[3]))
		}
	}
	return b.String()
}

// over is a / b, or 0 when b is 0.
func over(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
