// Command acpbench runs the cross-process and scale measurements of the
// benchmark module and writes their tables.
//
//	acpbench stdio  [flags]   calls per second over a spawned server's stdio
//	acpbench cancel [flags]   cancel latency over stdio, p50/p99
//	acpbench scale  [flags]   many requests blocked on one connection, then cancelled
//	acpbench sessions [flags] many sessions with a turn in flight, every turn then cancelled the ACP way
//	acpbench burst [flags]    a burst of session/cancel over a spawned agent's stdio, each turn holding two requests to the client
//	acpbench stream [flags]   a turn streaming thousands of updates over a spawned agent's stdio, and the stop under it
//	acpbench remote [flags]   acprpc's remote server and the TypeScript SDK's over WebSocket and Streamable HTTP
//
// Each writes NAME.json (raw figures) and NAME.txt (the table) into -out.
// Rows are "client:server" pairs of peer names; "ts" is the TypeScript SDK,
// run with node from the -ts directory.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/acpkit/acprpc/bench/remotebench"
)

type config struct {
	out          string
	server       string
	remoteServer string // the built cmd/remoteserver, for the stream over WebSocket and Streamable HTTP
	tsDir        string
	node         string
	rows         []row
}

type row struct{ client, server string }

func (r row) String() string {
	if r.client == r.server {
		return r.client
	}
	return r.client + "→" + r.server
}

const defaultRows = "acprpc:acprpc,coder:coder,jrpc2:jrpc2,lsp:lsp,sourcegraph:sourcegraph,xexp:xexp,echo:echo,handoff:handoff,ts:ts,coder:ts,ts:coder,acprpc:ts,ts:acprpc"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	sub, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(sub, flag.ExitOnError)
	var cfg config
	var rows string
	fs.StringVar(&cfg.out, "out", "results", "directory for the .json and .txt results")
	fs.StringVar(&cfg.server, "server", "", "path of the built cmd/server binary")
	fs.StringVar(&cfg.tsDir, "ts", "ts", "directory of the TypeScript peer (with node_modules installed)")
	fs.StringVar(&cfg.node, "node", "node", "node binary")
	switch sub {
	case "stdio":
		calls := fs.Int("calls", 20000, "calls per run")
		runs := fs.Int("runs", 3, "runs per row; the median is reported")
		var prof profiler
		fs.StringVar(&prof.cpuDir, "cpuprofile", "", "write CPU profiles of both sides' sequential calls into this directory (skips the 8-caller phase)")
		fs.StringVar(&prof.traceDir, "trace", "", "write execution traces of both sides' sequential calls into this directory (skips the 8-caller phase)")
		fs.BoolVar(&prof.seqOnly, "seqonly", false, "run the sequential calls only (for counting system calls per call)")
		fs.StringVar(&rows, "rows", defaultRows, "comma-separated client:server pairs")
		parse(fs, args, &cfg, &rows)
		check(runStdio(&cfg, *calls, *runs, prof))
	case "cancel":
		n := fs.Int("n", 1000, "cancellations per row")
		fs.StringVar(&rows, "rows", defaultRows, "comma-separated client:server pairs")
		parse(fs, args, &cfg, &rows)
		check(runCancel(&cfg, *n))
	case "scale":
		sizes := fs.String("n", "10000,100000", "comma-separated numbers of requests in flight")
		peers := fs.String("peers", "acprpc,coder,jrpc2,lsp,sourcegraph,xexp", "peers to run")
		wait := fs.Duration("wait", 20e9, "longest wait for each phase")
		parse(fs, args, &cfg, new(string))
		check(runScale(&cfg, strings.Split(*peers, ","), *sizes, *wait))
	case "sessions":
		n := fs.Int("n", 1000, "sessions, each with a prompt in flight")
		runs := fs.Int("runs", 3, "runs per peer, interleaved; the median is reported")
		peers := fs.String("peers", "acprpc,coder,jrpc2,lsp,sourcegraph,xexp", "peers to run")
		wait := fs.Duration("wait", 20e9, "longest wait for each phase")
		parse(fs, args, &cfg, new(string))
		check(runSessions(&cfg, strings.Split(*peers, ","), *n, *runs, *wait))
	case "burst":
		n := fs.Int("n", 1000, "sessions, each with a turn in flight")
		runs := fs.Int("runs", 3, "runs per agent, interleaved; the median is reported")
		agent := fs.String("agent", "", "path of the built examples/agent binary")
		rows := fs.String("agents", strings.Join(burstRowNames, ","), "agents to run, of "+strings.Join(burstRowNames, ", "))
		wait := fs.Duration("wait", 20e9, "longest wait for each phase")
		parse(fs, args, &cfg, new(string))
		if *agent == "" || cfg.server == "" {
			check(errors.New("burst needs -agent and -server"))
		}
		agents, err := burstAgents(*agent, cfg.server, strings.Split(*rows, ","))
		check(err)
		check(runBurst(&cfg, agents, *n, *runs, *wait))
	case "stream":
		runs := fs.Int("runs", 5, "runs per peer, interleaved, each in a fresh process")
		peers := fs.String("peers", "acprpc,coder,ts", "peers to run, of "+strings.Join(streamPeerNames, ", ")+" (-ws, -http: over WebSocket, Streamable HTTP)")
		var sc streamConfig
		fs.IntVar(&sc.chunks, "chunks", 10_000, "chunks per streamed turn")
		fs.IntVar(&sc.turns, "turns", 3, "streamed turns per run, plain and with tool calls each")
		fs.IntVar(&sc.cancels, "cancels", 40, "turns per run cancelled at a random chunk")
		fs.IntVar(&sc.pace, "pace", 1000, "the slow reader's updates per second")
		fs.DurationVar(&sc.slow, "slow", 3*time.Second, "how long the slow reader reads before it cancels")
		fs.DurationVar(&sc.stopWait, "stopwait", 10*time.Second, "how long the slow reader keeps its pace after its cancel")
		fs.IntVar(&sc.many, "many", 100, "sessions streaming at once, one of them cancelled (0: none)")
		fs.IntVar(&sc.manyChunks, "manychunks", 2000, "chunks each of the many sessions streams")
		fs.IntVar(&remotebench.ReceiveBuffer, "rcvbuf", 0, "over WebSocket and HTTP, the client's socket receive buffer in bytes, fixed as a pipe's (0: the kernel's, autotuned)")
		fs.StringVar(&sc.name, "name", "stream", "the record's name: NAME.txt and NAME.json in -out")
		fs.StringVar(&cfg.remoteServer, "remoteserver", "", "path of the built cmd/remoteserver binary, for the peers acprpc-ws and acprpc-http")
		parse(fs, args, &cfg, new(string))
		list, err := streamPeers(&cfg, strings.Split(*peers, ","))
		check(err)
		check(runStream(&cfg, list, *runs, sc))
	case "remote":
		rowsFlag := fs.String("rows", "acprpc:ws,ts:ws,acprpc:http,ts:http", "comma-separated server:transport pairs (servers acprpc and ts, transports ws and http)")
		remoteServer := fs.String("remoteserver", "", "path of the built cmd/remoteserver binary")
		runs := fs.Int("runs", 3, "runs per row, interleaved, each in a fresh server; the median is reported")
		var rc remotebench.Config
		fs.IntVar(&rc.Conns, "conns", 1000, "connections open at once")
		fs.IntVar(&rc.Warmup, "warmup", 500, "turns on one connection before anything is timed")
		fs.DurationVar(&rc.Duration, "duration", 3*time.Second, "how long each turns-per-second phase runs")
		fs.IntVar(&rc.Cancels, "cancels", 1000, "cancels timed one at a time")
		fs.DurationVar(&rc.Settle, "settle", time.Second, "the wait before each reading of the server's memory")
		parse(fs, args, &cfg, new(string))
		rows, err := parseRemoteRows(*rowsFlag)
		check(err)
		if *remoteServer == "" {
			check(errors.New("remote needs -remoteserver"))
		}
		check(runRemote(&cfg, rows, *remoteServer, rc, *runs))
	case "sessions-one": // one peer in a fresh process; used by sessions
		peer := fs.String("peer", "", "peer")
		n := fs.Int("n", 1000, "sessions")
		wait := fs.Duration("wait", 20e9, "longest wait for each phase")
		check(fs.Parse(args))
		res, err := sessionsOne(*peer, *n, *wait)
		check(err)
		check(json.NewEncoder(os.Stdout).Encode(res))
	case "scale-one": // one peer and size in a fresh process; used by scale
		peer := fs.String("peer", "", "peer")
		n := fs.Int("n", 10000, "requests in flight")
		wait := fs.Duration("wait", 20e9, "longest wait for each phase")
		check(fs.Parse(args))
		res, err := scaleOne(*peer, *n, *wait)
		check(err)
		check(json.NewEncoder(os.Stdout).Encode(res))
	default:
		usage()
	}
}

// parse parses args, then splits *rows, which the parse may have set.
func parse(fs *flag.FlagSet, args []string, cfg *config, rows *string) {
	check(fs.Parse(args))
	for _, r := range strings.Split(*rows, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		c, s, ok := strings.Cut(r, ":")
		if !ok {
			c, s = r, r
		}
		cfg.rows = append(cfg.rows, row{c, s})
	}
	check(os.MkdirAll(cfg.out, 0o755))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: acpbench stdio|cancel|scale|sessions|burst|remote [flags]")
	os.Exit(2)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "acpbench:", err)
		os.Exit(1)
	}
}

// writeResults writes v as NAME.json and table as NAME.txt, and prints the table.
func writeResults(cfg *config, name string, v any, table string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Print(table)
	return os.WriteFile(filepath.Join(cfg.out, name+".txt"), []byte(table), 0o644)
}
