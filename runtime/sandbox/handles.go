package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
)

// A handle names a session for its owner from anywhere: a call that passes
// it ([Request.Handle]) continues the session, whichever MCP session or
// transport the call came through. Handles are random (crypto/rand, 130
// bits), handed out in [SessionInfo.Handle], and work only for the owner that
// created the session ([Request.Owner]): another owner's handle is treated
// exactly as an unknown one.

// ErrUnknownHandle is why a run with a handle did not run: no live session
// of the run's owner has that handle. It was never handed out, its session
// ended (idle, evicted, closed), or it belongs to another owner; the caller
// cannot tell which, by design.
var ErrUnknownHandle = errors.New("no session of this caller has that handle: it ended, expired, or was never this caller's")

// errShutDown is what a closed [Manager] answers.
var errShutDown = errors.New("the sandbox is shut down")

// HandleRef identifies a handle and its owner without holding either: the
// SHA-256 of each, hex-encoded. It is what a sandbox may carry as labels for
// an engine that searches them (a Kubernetes engine resolving a handle from
// any replica; see docs/architecture.md).
type HandleRef struct {
	Handle string // hex SHA-256 of the handle
	Owner  string // hex SHA-256 of the owner
}

// refOf is the [HandleRef] of handle for owner.
func refOf(handle, owner string) HandleRef {
	h, o := sha256.Sum256([]byte(handle)), sha256.Sum256([]byte(owner))
	return HandleRef{Handle: hex.EncodeToString(h[:]), Owner: hex.EncodeToString(o[:])}
}

// Handles is where a [Manager] records which session each handle names, so
// that it finds the session a call's handle names. The default,
// [NewMemoryHandles], keeps them in this process; an engine whose sandboxes
// outlive one codebridge replica would resolve a ref by searching its
// sandboxes' labels instead.
type Handles interface {
	// Bind records that ref names the session key.
	Bind(ctx context.Context, ref HandleRef, key string) error
	// Resolve returns the key of the session ref names, or ErrUnknownHandle.
	Resolve(ctx context.Context, ref HandleRef) (key string, err error)
	// Unbind forgets ref; its handle is unknown from then on.
	Unbind(ctx context.Context, ref HandleRef)
}

// NewMemoryHandles returns the [Handles] of one process.
func NewMemoryHandles() Handles { return &memoryHandles{keys: map[HandleRef]string{}} }

type memoryHandles struct {
	mu   sync.Mutex // protects following
	keys map[HandleRef]string
}

func (h *memoryHandles) Bind(_ context.Context, ref HandleRef, key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys[ref] = key
	return nil
}

func (h *memoryHandles) Resolve(_ context.Context, ref HandleRef) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key, ok := h.keys[ref]
	if !ok {
		return "", ErrUnknownHandle
	}
	return key, nil
}

func (h *memoryHandles) Unbind(_ context.Context, ref HandleRef) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, ref)
}
