package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVersionOf(t *testing.T) {
	built := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/acpkit/acprpc/cmd/acpcheck", Version: v}}, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	assert.Equal(t, "v0.3.0", versionOf("v0.3.0", built("v0.2.0")), "a stamped release wins")
	assert.Equal(t, "v0.2.0", versionOf("", built("v0.2.0")), "go install ...@v0.2.0")
	assert.Equal(t, "devel", versionOf("", built("(devel)")), "a build from a checkout")
	assert.Equal(t, "devel", versionOf("", none))
}

func TestVersionCommand(t *testing.T) {
	for _, arg := range []string{"-version", "--version", "version"} {
		var stdout, stderr bytes.Buffer
		code := mainCode(context.Background(), []string{arg}, &stdout, &stderr)
		assert.Equal(t, 0, code, arg)
		assert.Equal(t, "acpcheck "+version+"\n", stdout.String(), arg)
		assert.Empty(t, stderr.String(), arg)
	}
}
