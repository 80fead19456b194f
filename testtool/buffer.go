package testtool

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a writer on another goroutine (a child
// process's output, a logger's workers) may write while the test reads
// it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
