// Package inflight counts work in progress, for the server's runs and the
// HTTP front's requests, so that a shutdown can wait until there is none.
package inflight

import (
	"context"
	"sync"
)

// Counter counts work in progress and lets one wait until there is none.
// Its zero value is ready to use.
type Counter struct {
	mu   sync.Mutex // protects following
	n    int
	zero chan struct{} // closed when n reaches 0; nil while no one waits
}

// Add adds delta to the count.
func (c *Counter) Add(delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += delta
	if c.n == 0 && c.zero != nil {
		close(c.zero)
		c.zero = nil
	}
}

// Count is the work in progress.
func (c *Counter) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Wait waits until the count is 0 and reports true, or until ctx ends.
func (c *Counter) Wait(ctx context.Context) bool {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return true
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	zero := c.zero
	c.mu.Unlock()
	select {
	case <-zero:
		return true
	case <-ctx.Done():
		return false
	}
}
