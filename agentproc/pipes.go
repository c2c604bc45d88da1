package agentproc

import (
	"io"
	"os"
)

// agentPipes are the agent's stdin and stdout, and its stderr when what it
// goes to is not a file the agent can be handed: then this side copies it.
type agentPipes struct {
	stdinR, stdinW   *os.File
	stdoutR, stdoutW *os.File
	stderrR, stderrW *os.File // nil unless copied
	stderrFile       *os.File // the agent's stderr when it goes to a file; nil to discard
}

func newAgentPipes(stderr io.Writer) (*agentPipes, error) {
	p := &agentPipes{}
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		p.closeOurEnds()
		p.closeChildEnds()
		return nil, err
	}
	switch f := stderr.(type) {
	case nil:
	case *os.File:
		p.stderrFile = f
	default:
		if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
			p.closeOurEnds()
			p.closeChildEnds()
			return nil, err
		}
	}
	return p, nil
}

// childEnds are the command's Stdin, Stdout and Stderr. os/exec hands
// files to the child as they are, and so starts no copying goroutine of
// its own that a grandchild holding a pipe could keep waiting.
func (p *agentPipes) childEnds() (stdin io.Reader, stdout, stderr io.Writer) {
	stdin, stdout = p.stdinR, p.stdoutW
	switch {
	case p.stderrW != nil:
		stderr = p.stderrW
	case p.stderrFile != nil:
		stderr = p.stderrFile
	}
	return stdin, stdout, stderr
}

func (p *agentPipes) closeChildEnds() {
	for _, f := range []*os.File{p.stdinR, p.stdoutW, p.stderrW} {
		if f != nil {
			f.Close()
		}
	}
}

func (p *agentPipes) closeOurEnds() {
	for _, f := range []*os.File{p.stdinW, p.stdoutR, p.stderrR} {
		if f != nil {
			f.Close()
		}
	}
}
