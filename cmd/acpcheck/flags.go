package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// commandFlags is the flag set of one acpcheck command, which writes its
// errors and its usage (synopsis, then the flags) to stderr.
func commandFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; done says the command ends at once, with code:
// 0 after -h, which printed the usage, and 2 for a bad flag.
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	case err != nil:
		return 2, true
	}
	return 0, false
}
