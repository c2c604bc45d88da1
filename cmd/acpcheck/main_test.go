package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if testAgentMain() {
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
