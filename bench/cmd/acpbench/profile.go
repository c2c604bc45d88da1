package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strings"
)

// profiler records where a stdio run's sequential calls spend their time:
// a CPU profile (-cpuprofile DIR) or an execution trace (-trace DIR) of the
// client's sequential phase, and of the server's whole life (the sequential
// phase and its warm-up: a profiled run skips the 8-caller phase). Files are
// DIR/ROW-client.cpu, DIR/ROW-server.cpu, DIR/ROW-client.trace and
// DIR/ROW-server.trace. With -seqonly a run skips the 8-caller phase and
// records nothing, so that counters kept outside the process (perf stat's
// system calls) see the sequential calls alone, with no profiler's signals.
type profiler struct {
	cpuDir, traceDir string
	seqOnly          bool
}

func (p profiler) on() bool { return p.cpuDir != "" || p.traceDir != "" }

func profileFile(dir string, r row, side, ext string) string {
	name := strings.NewReplacer("→", "-", "/", "-").Replace(r.String())
	return filepath.Join(dir, name+"-"+side+"."+ext)
}

// serverArgs returns the flags that make cmd/server record the same.
func (p profiler) serverArgs(r row) []string {
	var args []string
	if p.cpuDir != "" {
		args = append(args, "-cpuprofile", profileFile(p.cpuDir, r, "server", "cpu"))
	}
	if p.traceDir != "" {
		args = append(args, "-trace", profileFile(p.traceDir, r, "server", "trace"))
	}
	return args
}

// start begins recording the client side; the returned function stops it.
func (p profiler) start(r row) (stop func() error, err error) {
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}
	if p.cpuDir != "" {
		f, err := os.Create(profileFile(p.cpuDir, r, "client", "cpu"))
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	if p.traceDir != "" {
		f, err := os.Create(profileFile(p.traceDir, r, "client", "trace"))
		if err != nil {
			return nil, errors.Join(err, stopAll())
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return nil, errors.Join(err, stopAll())
		}
		stops = append(stops, func() error { trace.Stop(); return f.Close() })
	}
	return stopAll, nil
}
