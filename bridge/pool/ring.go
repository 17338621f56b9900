package pool

import (
	"slices"
	"sync"
)

// maxLineLen bounds one stored stderr line; the rest of a longer line is dropped.
const maxLineLen = 4096

// A lineRing is an io.Writer that keeps the last lines written to it. It holds
// a server's stderr so errors can show why the server failed.
type lineRing struct {
	onLine func(string)        // called with each complete line, outside mu; may be nil
	mask   func(string) string // applied to each line before it is kept or passed on; may be nil

	mu      sync.Mutex // protects following
	lines   []string   // circular, len <= max
	next    int        // where the next line goes once lines is full
	max     int
	partial []byte // the line being written
}

func newLineRing(max int, onLine func(string)) *lineRing {
	return &lineRing{max: max, onLine: onLine}
}

func (r *lineRing) Write(p []byte) (int, error) {
	var done []string
	r.mu.Lock()
	for _, b := range p {
		if b == '\n' {
			line := r.masked(string(r.partial))
			r.partial = r.partial[:0]
			r.push(line)
			if r.onLine != nil {
				done = append(done, line)
			}
			continue
		}
		if len(r.partial) < maxLineLen {
			r.partial = append(r.partial, b)
		}
	}
	r.mu.Unlock()
	for _, l := range done {
		r.onLine(l)
	}
	return len(p), nil
}

func (r *lineRing) masked(line string) string {
	if r.mask == nil {
		return line
	}
	return r.mask(line)
}

func (r *lineRing) push(line string) {
	if r.max <= 0 {
		return
	}
	if len(r.lines) < r.max {
		r.lines = append(r.lines, line)
		return
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % r.max
}

// Tail returns the kept lines, oldest first, and any unfinished last line.
func (r *lineRing) Tail() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Concat(r.lines[r.next:], r.lines[:r.next])
	if len(r.partial) > 0 {
		out = append(out, r.masked(string(r.partial)))
	}
	return out
}
