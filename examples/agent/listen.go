package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"

	"github.com/acpkit/acprpc/examples/internal/demo"
	"github.com/acpkit/acprpc/remote"
)

// serve is -listen: it serves the demo agent at addr with opts until ctx
// ends, and returns the exit status.
func serve(ctx context.Context, addr string, opts *remote.Options, log *slog.Logger, graceful bool) int {
	newAgent := func(log *slog.Logger) *demo.Agent {
		agent := demo.NewAgent(log)
		if !graceful {
			agent.ConfirmWait = 0
		}
		return agent
	}
	err := demo.ServeAgent(ctx, addr, opts, log, newAgent, shutdownWait, func(url string) {
		fmt.Println(url) // the first line of output, for whoever started the agent
		log.Info("listening", "url", url, "websocket", "ws"+url[len("http"):])
	})
	if err != nil {
		log.Error("serving failed", "error", err)
		return 1
	}
	return 0
}

// deployment is what the flags of -listen say about where the agent is
// served: the names, networks and pages it answers besides this machine's
// own, and the token a client must show. They widen the remote package's
// loopback-only defaults, as a replica behind a load balancer needs.
type deployment struct {
	hosts, peers, origins list
	tokenFile             string
}

func (d *deployment) register(fs *flag.FlagSet) {
	fs.Var(&d.hosts, "allow-host", "with -listen, also answer requests whose Host header names `NAME`, "+
		"such as the balancer's public name (repeat the flag or separate with commas; \"*\" allows any)")
	fs.Var(&d.peers, "allow-peer", "with -listen, also take connections from `CIDR` (an address or a network), "+
		"such as the balancer's (repeatable)")
	fs.Var(&d.origins, "allow-origin", "with -listen, also let browser pages of `ORIGIN` (https://app.example.com) connect (repeatable)")
	fs.StringVar(&d.tokenFile, "token-file", "", "with -listen, require \"Authorization: Bearer TOKEN\", "+
		"TOKEN being the content of `FILE` (kept off the command line, where any user of the machine sees it)")
}

// set reports whether any of the flags was given.
func (d *deployment) set() bool {
	return len(d.hosts)+len(d.peers)+len(d.origins) > 0 || d.tokenFile != ""
}

// options returns the remote.Options the flags describe.
func (d *deployment) options() (*remote.Options, error) {
	opts := &remote.Options{AllowedHosts: d.hosts, AllowedOrigins: d.origins}
	for _, p := range d.peers {
		prefix, err := parsePeer(p)
		if err != nil {
			return nil, err
		}
		opts.AllowedPeers = append(opts.AllowedPeers, prefix)
	}
	if d.tokenFile != "" {
		b, err := os.ReadFile(d.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("-token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return nil, fmt.Errorf("-token-file: %s holds no token", d.tokenFile)
		}
		opts.Authenticate = remote.BearerToken(token)
	}
	return opts, nil
}

// parsePeer reads a network (10.0.0.0/8) or a single address (10.0.0.7).
func parsePeer(s string) (netip.Prefix, error) {
	if prefix, err := netip.ParsePrefix(s); err == nil {
		return prefix.Masked(), nil
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("-allow-peer %q: neither a network (10.0.0.0/8) nor an address", s)
	}
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// list is a flag that may be repeated, each value also split at commas.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

func (l *list) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l = append(*l, item)
		}
	}
	if len(*l) == 0 {
		return errors.New("empty")
	}
	return nil
}
