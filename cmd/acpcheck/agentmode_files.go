package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// blockingFiles are the files acpcheck agent asks the client to read: on
// Unix each is a named pipe, whose read waits until acpcheck lets it go, so
// that fs/read_text_file stays open until the turn is cancelled or ends;
// elsewhere a plain file. They live in a directory of their own, removed
// by close.
type blockingFiles struct {
	mu    sync.Mutex
	dir   string
	n     int
	files []*blockingFile
	err   error
}

// blockingFile is one file to read; release lets its readers go.
type blockingFile struct {
	path string
	once sync.Once
	let  func() // lets the readers go; nil for a plain file
}

// releasedText is what a blocking file reads once let go.
const releasedText = "acpcheck: this file stood for a read that lasts until the turn is cancelled; the turn is over.\n"

// open makes a new file to read. A file that cannot be made is a path that
// does not exist, which the client answers with an error: the turn goes
// on without an open read.
func (b *blockingFiles) open() *blockingFile {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir == "" && b.err == nil {
		b.dir, b.err = os.MkdirTemp("", "acpcheck-agent-")
	}
	b.n++
	f := &blockingFile{path: filepath.Join(b.dir, fmt.Sprintf("read-%d.txt", b.n))}
	if b.err == nil {
		f.let = makeBlocking(f.path)
	}
	b.files = append(b.files, f)
	return f
}

// release lets the file's readers go, once; a nil file has none.
func (f *blockingFile) release() {
	if f == nil || f.let == nil {
		return
	}
	f.once.Do(f.let)
}

// close lets every file go and removes the directory.
func (b *blockingFiles) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.files {
		f.release()
	}
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
