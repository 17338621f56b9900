package confine

import (
	"bytes"
	"fmt"
	"sync"
)

// CapBuffer keeps the first Max bytes written to it, and counts the rest:
// a container's stderr, or a helper process's, kept for diagnostics. It is
// safe for concurrent use.
type CapBuffer struct {
	Max int

	mu      sync.Mutex // protects following
	buf     bytes.Buffer
	dropped int64
}

func (b *CapBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := max(0, min(len(p), b.Max-b.buf.Len()))
	b.buf.Write(p[:n])
	b.dropped += int64(len(p) - n)
	return len(p), nil
}

// String is what was kept, with a note of how much was dropped.
func (b *CapBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped > 0 {
		return fmt.Sprintf("%s… (%d more bytes)", b.buf.String(), b.dropped)
	}
	return b.buf.String()
}
