package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/acpkit/acprpc/bench"
)

// serverCmd returns the command line that serves peer name over stdio.
func serverCmd(cfg *config, name string) ([]string, error) {
	if name == "ts" {
		return []string{cfg.node, filepath.Join(cfg.tsDir, "agent.mjs")}, nil
	}
	if _, ok := bench.Lookup(name); !ok {
		return nil, fmt.Errorf("unknown peer %q", name)
	}
	if cfg.server == "" {
		return nil, errors.New("-server is required")
	}
	return []string{cfg.server, "-peer", name}, nil
}

// proc is a spawned server with the client's ends of its stdio.
type proc struct {
	cmd    *exec.Cmd
	stdin  *os.File // we write
	stdout *os.File // we read
	// Stamps from the server's stderr, by tag.
	started  chan int64
	seen     chan int64
	allocs   chan int64 // "M" stamps: the heap objects a Go agent had allocated as a prompt began
	phases   []string   // "P" lines: read once stderrWG is closed
	stderrWG chan struct{}
}

func spawn(argv []string) (*proc, error) { return spawnLogging(argv, true) }

// spawnQuiet is spawn for a server whose stderr is a log: it is read and
// dropped, as a client that keeps an agent's log elsewhere does.
func spawnQuiet(argv []string) (*proc, error) { return spawnLogging(argv, false) }

func spawnLogging(argv []string, echo bool) (*proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p := &proc{cmd: cmd, stdin: inW, stdout: outR,
		started: make(chan int64, 1<<16), seen: make(chan int64, 1<<16), allocs: make(chan int64, 1<<16), stderrWG: make(chan struct{})}
	go func() {
		defer close(p.stderrWG)
		defer errR.Close()
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			tag, ns, ok := strings.Cut(sc.Text(), " ")
			v, err := strconv.ParseInt(ns, 10, 64)
			switch {
			case ok && err == nil && tag == "B":
				p.started <- v
			case ok && err == nil && tag == "C":
				p.seen <- v
			case ok && err == nil && tag == "M":
				p.allocs <- v
			case ok && tag == "P":
				p.phases = append(p.phases, ns)
			case echo:
				fmt.Fprintf(os.Stderr, "server %s: %s\n", filepath.Base(argv[0]), sc.Text())
			}
		}
	}()
	return p, nil
}

// close ends the server by closing its stdin and waits for it.
func (p *proc) close() error {
	p.stdin.Close()
	err := p.cmd.Wait()
	p.stdout.Close()
	<-p.stderrWG
	return err
}

// runTS runs the TypeScript client against the server argv and decodes its
// one-line JSON answer into v.
func runTS(cfg *config, mode string, n int, server []string, v any) error {
	args := append([]string{filepath.Join(cfg.tsDir, "client.mjs"), mode, strconv.Itoa(n), "--"}, server...)
	cmd := exec.Command(cfg.node, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ts client: %w", err)
	}
	return json.Unmarshal(out.Bytes(), v)
}

// tsAvailable reports whether the TypeScript peer can run.
func tsAvailable(cfg *config) bool {
	if _, err := exec.LookPath(cfg.node); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(cfg.tsDir, "node_modules", "@agentclientprotocol", "sdk", "package.json"))
	return err == nil
}

func usesTS(r row) bool { return r.client == "ts" || r.server == "ts" }

var _ io.Reader = (*os.File)(nil)
