package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// AgentPackage is the import path of the demo agent's command.
const AgentPackage = "github.com/acpkit/acprpc/examples/agent"

// BuildAgent builds the demo agent into dir with the go command found on
// PATH (the one running `go run` or `go test`), from the module that holds
// the current directory, and returns the binary's path.
func BuildAgent(ctx context.Context, dir string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build the demo agent: %w", err)
	}
	root, err := moduleRoot(ctx, goCmd)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "agent")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, AgentPackage)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", AgentPackage, err, msg)
	}
	return out, nil
}

// moduleRoot returns the directory of the acprpc module holding the current
// directory.
func moduleRoot(ctx context.Context, goCmd string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOMOD")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go env GOMOD: %w: %s", err, stderr.String())
	}
	gomod := strings.TrimSpace(stdout.String())
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run this from inside the acprpc repository (no go.mod found), or pass -agent")
	}
	return filepath.Dir(gomod), nil
}

// AgentProcess is a running agent subprocess.
type AgentProcess struct {
	cmd *exec.Cmd
	// Stdin is the agent's standard input, Stdout its standard output.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
}

// StartAgent starts the agent binary at path; its stderr goes to stderr.
func StartAgent(path string, stderr io.Writer, args ...string) (*AgentProcess, error) {
	cmd := exec.Command(path, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the agent: %w", err)
	}
	return &AgentProcess{cmd: cmd, Stdin: stdin, Stdout: stdout}, nil
}

// Wait waits for the agent to exit, which it does once its stdin is closed.
func (p *AgentProcess) Wait() error { return p.cmd.Wait() }

// Kill ends the agent at once.
func (p *AgentProcess) Kill() { _ = p.cmd.Process.Kill() }
