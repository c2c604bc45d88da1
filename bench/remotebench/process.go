package remotebench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Server is a server process serving the workload: cmd/remoteserver, or
// node with ../ts/remote-agent.mjs. Each prints its endpoint as its first
// line and exits when its stdin ends.
type Server struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// Start starts argv in dir ("" for the current one) and waits for its
// endpoint. Its stderr goes to this process's.
func Start(dir string, argv ...string) (*Server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("remotebench: %s printed no endpoint: %w", argv[0], err)
	}
	s.URL = strings.TrimSpace(line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return s, nil
}

// PID is the server's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop closes the server's stdin and waits for it to exit.
func (s *Server) Stop() error {
	_ = s.stdin.Close()
	return s.cmd.Wait()
}
