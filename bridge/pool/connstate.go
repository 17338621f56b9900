package pool

import (
	"fmt"
	"slices"
	"time"
)

// A connState is where a [conn] is in its life. The transitions, all made
// by [conn.setStateLocked]:
//
//	starting → active            the start completed and its entry serves it
//	starting → closing           the start was superseded, or the pool closed, meanwhile
//	active   → draining          retired with requests in flight
//	active   → closing           retired with none
//	draining → closing           its last request ended
//	active, draining → exited    the session ended on its own
//	closing  → closed            the session ended after the close
//
// closed and exited are final.
type connState uint8

const (
	connStarting connState = iota // dialing; no entry serves it yet
	connActive                    // takes new requests
	connDraining                  // retired: takes no new requests; closed when its last one ends
	connClosing                   // a deliberate close has begun
	connClosed                    // the session ended after a deliberate close
	connExited                    // the session ended on its own: crash or disconnect
)

var connStateNames = [...]string{
	connStarting: "starting",
	connActive:   "active",
	connDraining: "draining",
	connClosing:  "closing",
	connClosed:   "closed",
	connExited:   "exited",
}

func (s connState) String() string {
	if int(s) < len(connStateNames) {
		return connStateNames[s]
	}
	return fmt.Sprintf("connState(%d)", uint8(s))
}

// gone reports whether the session has ended, deliberately or not.
func (s connState) gone() bool { return s == connClosed || s == connExited }

// connTransitions lists, for each state, the states it may become.
var connTransitions = [...][]connState{
	connStarting: {connActive, connClosing},
	connActive:   {connDraining, connClosing, connExited},
	connDraining: {connClosing, connExited},
	connClosing:  {connClosed},
}

// setStateLocked moves c to next and returns the state it was in. c.mu must
// be held. A transition not in connTransitions is a bug in the pool, and
// panics, as a negative [sync.WaitGroup] counter does: the pool's bookkeeping
// of processes would be wrong from then on.
func (c *conn) setStateLocked(next connState) (prev connState) {
	prev = c.state
	if int(prev) >= len(connTransitions) || !slices.Contains(connTransitions[prev], next) {
		panic(fmt.Sprintf("pool: MCP server %q: illegal connection state transition %v → %v", c.name, prev, next))
	}
	c.state = next
	return prev
}

// getState returns c's state.
func (c *conn) getState() connState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// setState moves c to next (see setStateLocked) and returns the state it was in.
func (c *conn) setState(next connState) connState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setStateLocked(next)
}

// use counts a request on c at now if c takes new requests, and reports
// whether it did.
func (c *conn) use(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != connActive {
		return false
	}
	c.refs++
	c.lastUsed = now
	return true
}

// unuse ends a request counted by use, at now. It reports whether the caller
// must close c now: c was draining and this was its last request.
func (c *conn) unuse(now time.Time) (closeNow bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refs--
	c.lastUsed = now
	if c.state == connDraining && c.refs == 0 {
		c.setStateLocked(connClosing)
		return true
	}
	return false
}

// retire makes c take no new requests and reports whether the caller must
// close it now (no request is in flight on it). Only an active conn is
// retired: the pool retires the conn an entry serves, and an entry stops
// serving a conn when its session ends.
func (c *conn) retire() (closeNow bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs > 0 {
		c.setStateLocked(connDraining)
		return false
	}
	c.setStateLocked(connClosing)
	return true
}

// idle returns how long c has had no request in flight at now: 0 if one is.
func (c *conn) idle(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs > 0 {
		return 0
	}
	return now.Sub(c.lastUsed)
}

// inFlight returns how many requests are in flight on c.
func (c *conn) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refs
}
