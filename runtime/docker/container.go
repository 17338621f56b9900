package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
)

// APIContainer is a started sandbox container with its standard streams
// attached ([confine.Attached]: Stdin, Stdout, Stderr, Done, and the
// stream of [enginekit.Container.Stream], stdout and stdin or a socket). Read Stdout and
// write Stdin from one goroutine each; the other methods are safe for
// concurrent use.
type APIContainer struct {
	id string
	*confine.Attached

	c       *Client
	started time.Time
	killed  atomic.Bool // Kill was called

	exited   chan struct{} // closed when the wait request has answered
	code     int           // the exit code, once exited is closed
	waitErr  error         // why there is no code, once exited is closed
	stopWait context.CancelFunc

	mu      sync.Mutex // protects following
	removed bool
}

// ID is the container's ID.
func (ct *APIContainer) ID() string { return ct.id }

// Started is when the container started.
func (ct *APIContainer) Started() time.Time { return ct.started }

// Streams are the container's attached streams.
func (ct *APIContainer) Streams() *confine.Attached { return ct.Attached }

// StdinWriter is a container's standard input. CloseWrite closes it (the
// process reads EOF) while output can still be read.
type StdinWriter = confine.StdinWriter

// placement is what a container started through a client gets from the
// engine: its socket's folder made in channelDir, "" meaning none (the
// stream is stdin and stdout).
type placement struct {
	channelDir string
	owner      map[string]string // ownership labels; nil means the client's
}

// Start creates a container from s, attaches to its stdin, stdout and
// stderr, and starts it, with the sandbox's seccomp profile. Attaching
// before starting loses no output. On error nothing is left behind.
func (c *Client) Start(ctx context.Context, s confine.Spec) (*APIContainer, error) {
	return c.start(ctx, s, placement{})
}

func (c *Client) start(ctx context.Context, s confine.Spec, at placement) (*APIContainer, error) {
	owner := at.owner
	if owner == nil {
		owner = c.owner
	}
	if s.Runtime == "" && confine.GVisor(c.runtime) {
		// The daemon's default is gVisor: the hardening follows it.
		s.Runtime = c.runtime
	}
	cr, err := newCreateRequest(s, owner)
	if err != nil {
		return nil, err
	}
	ct, err := c.launcher().Launch(ctx, s, &cr, at.channelDir)
	if err != nil {
		return nil, err
	}
	ct.started = time.Now()
	return ct, nil
}

// launcher creates, attaches to and starts c's containers: Docker's part
// of the start the drivers share ([enginekit.Launcher]).
func (c *Client) launcher() *enginekit.Launcher[*APIContainer] {
	return &enginekit.Launcher[*APIContainer]{
		Name:     "Docker",
		API:      c.api(),
		Timeout:  requestTimeout,
		Log:      c.log,
		Declined: &c.declined,
		Created: func(id string, at *confine.Attached) *APIContainer {
			return &APIContainer{id: id, Attached: at, c: c, exited: make(chan struct{})}
		},
		Attach: c.attach,
		// The exit code is asked for before the start: the container
		// removes itself once it has exited, and with it its state.
		BeforeStart: func(ctx context.Context, ct *APIContainer) error {
			if err := ct.watchExit(ctx); err != nil {
				return fmt.Errorf("waiting for container %s: %w", enginekit.ShortID(ct.id), err)
			}
			return nil
		},
		MissingImage: func(err error) bool { return isStatus(err, http.StatusNotFound) },
	}
}

// watchExit sends the wait request (condition "removed": it answers once
// the container has exited and the daemon has removed it) and reads its
// answer in the background; it returns once the daemon has taken the
// request. The request ends with the container, or when its streams are
// closed ([APIContainer.CloseStreams]).
func (ct *APIContainer) watchExit(ctx context.Context) error {
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	ct.stopWait = stop
	q := url.Values{"condition": {"removed"}}
	hctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	// The daemon sends the headers at once and the body when the container
	// is gone: only the wait for the headers is bounded by ctx.
	stopHeaders := context.AfterFunc(hctx, stop)
	resp, err := ct.c.request(wctx, http.MethodPost, "/containers/"+ct.id+"/wait", q, nil)
	stopHeaders()
	if err != nil {
		stop()
		return err
	}
	go func() {
		defer close(ct.exited)
		defer resp.Body.Close()
		var w struct {
			StatusCode int
			Error      *struct{ Message string }
		}
		switch err := json.NewDecoder(resp.Body).Decode(&w); {
		case err != nil:
			ct.code, ct.waitErr = -1, fmt.Errorf("no exit code from Docker: %w", err)
		case w.Error != nil && w.Error.Message != "":
			ct.code, ct.waitErr = -1, fmt.Errorf("no exit code from Docker: %s", w.Error.Message)
		default:
			ct.code = w.StatusCode
		}
	}()
	return nil
}

// Wait blocks until the container has stopped and been removed, and returns
// its exit code. It has no deadline of its own: give ctx one.
func (ct *APIContainer) Wait(ctx context.Context) (int, error) {
	select {
	case <-ct.exited:
		return ct.code, ct.waitErr
	case <-ctx.Done():
		return -1, fmt.Errorf("waiting for container %s: %w", enginekit.ShortID(ct.id), ctx.Err())
	}
}

// OOMKilled reports whether the container, which must have exited, was
// killed for exceeding its memory limit: an exit by SIGKILL (code 137) that
// [APIContainer.Kill] did not cause. Nothing else in a sandbox without
// capabilities sends SIGKILL to its process, except the code itself; and the
// container, removed once it exited, can no longer be asked.
//
// Any other failing exit is checked against the daemon's "oom" event for
// the container: under gVisor the host's OOM killer may take one of the
// sandbox's helper processes instead of its kernel, which then exits with a
// code of its own (2 here, likely a Go panic's), while the cgroup's OOM was seen all
// the same.
func (ct *APIContainer) OOMKilled(ctx context.Context) (bool, error) {
	code, err := ct.Wait(ctx)
	if err != nil || code == 0 || ct.killed.Load() {
		return false, err
	}
	if code == 137 {
		return true, nil
	}
	oom, err := ct.c.oomEvent(ctx, ct.id, ct.started)
	if err != nil {
		// The exit code stands; only its cause is unknown.
		ct.c.log.Warn("could not tell whether the container ran out of memory", "container", enginekit.ShortID(ct.id), "code", code, "err", err)
	}
	return oom, nil
}

// oomEvent reports whether the daemon logged an "oom" event for container
// id since it started. The daemon answers from the events it keeps (the
// last 256 of all containers), so on a daemon busy with many others the
// event may be gone, and the answer is false.
func (c *Client) oomEvent(ctx context.Context, id string, since time.Time) (bool, error) {
	filters, err := json.Marshal(map[string][]string{"type": {"container"}, "container": {id}, "event": {"oom"}})
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.request(ctx, http.MethodGet, "/events", url.Values{
		// until in the past: the daemon sends what it has kept and ends
		// the answer instead of following new events.
		"since":   {eventTime(since.Add(-time.Second))},
		"until":   {eventTime(time.Now())},
		"filters": {string(filters)},
	}, nil)
	if err != nil {
		return false, fmt.Errorf("asking the daemon whether container %s ran out of memory: %w", enginekit.ShortID(id), err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct{ Action string }
		switch err := dec.Decode(&ev); {
		case errors.Is(err, io.EOF):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("reading the daemon's events of container %s: %w", enginekit.ShortID(id), err)
		case ev.Action == "oom":
			return true, nil
		}
	}
}

// eventTime is t as the events API takes it: seconds and nanoseconds.
func eventTime(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }

// Kill sends SIGKILL to the container. A container that is not running (any
// more) is not an error.
func (ct *APIContainer) Kill(ctx context.Context) error {
	ct.killed.Store(true)
	err := ct.c.do(ctx, http.MethodPost, "/containers/"+ct.id+"/kill", url.Values{"signal": {"SIGKILL"}}, nil, nil)
	if err == nil || isStatus(err, http.StatusConflict) || isStatus(err, http.StatusNotFound) {
		return nil
	}
	return fmt.Errorf("killing container %s: %w", enginekit.ShortID(ct.id), err)
}

// Remove force-removes the container (killing it if it runs) and closes its
// streams. Removing a container twice, or one already gone, is not an error.
func (ct *APIContainer) Remove(ctx context.Context) error {
	ct.mu.Lock()
	already := ct.removed
	ct.removed = true
	ct.mu.Unlock()
	defer ct.CloseStreams()
	if already {
		return nil
	}
	ct.killed.Store(true)
	return ct.c.remove(ctx, ct.id)
}

// CloseStreams ends the stream, closes the attach connection
// ([confine.Attached.CloseStreams]) and gives up the wait for the exit
// code. The container's process exits when its stream ends. Closing again
// does nothing.
func (ct *APIContainer) CloseStreams() {
	ct.Attached.CloseStreams()
	if ct.stopWait != nil {
		ct.stopWait()
	}
}

func (c *Client) remove(ctx context.Context, id string) error {
	err := c.do(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
	// 409: the daemon is removing it already (auto-remove).
	if err == nil || isStatus(err, http.StatusNotFound) || isStatus(err, http.StatusConflict) && strings.Contains(err.Error(), "in progress") {
		return nil
	}
	return fmt.Errorf("removing container %s: %w", enginekit.ShortID(id), err)
}

// inspect returns whether the container exists and is running.
func (c *Client) inspect(ctx context.Context, id string) (running bool, err error) {
	var data struct{ State struct{ Running bool } }
	if err := c.do(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, &data); err != nil {
		return false, fmt.Errorf("inspecting container %s: %w", enginekit.ShortID(id), err)
	}
	return data.State.Running, nil
}

// Summary describes a container in [Client.List].
type Summary struct {
	ID      string            `json:"Id"`
	State   string            `json:"State"`
	Labels  map[string]string `json:"Labels"`
	Created int64             `json:"Created"` // unix seconds
}

// List returns all containers (running or not) carrying
// [confine.LabelManaged], whichever codebridge process created them.
func (c *Client) List(ctx context.Context) ([]Summary, error) {
	filters, _ := json.Marshal(map[string][]string{"label": {confine.LabelManaged + "=true"}})
	q := url.Values{"all": {"1"}, "filters": {string(filters)}}
	var list []Summary
	if err := c.do(ctx, http.MethodGet, "/containers/json", q, nil, &list); err != nil {
		return nil, fmt.Errorf("listing codebridge containers: %w", err)
	}
	return list, nil
}

// RemoveStale removes the containers left behind by codebridge processes on
// this host that no longer run ([confine.Owner.Stale]), and returns how many
// it removed. Containers of live codebridge processes, including other
// instances sharing this daemon, and of other hosts are left alone, and so
// are those created less than [staleGrace] ago: they end with their
// streams, and the daemon removes them. It removes several at once.
func (c *Client) RemoveStale(ctx context.Context) (int, error) {
	return c.removeStale(ctx, c.self, staleGrace)
}

// staleGrace is how long a running container of a codebridge that no longer
// runs is left to end by itself before [Client.RemoveStale] removes it.
const staleGrace = time.Minute

// removeStale removes the containers that are stale as seen from self.
func (c *Client) removeStale(ctx context.Context, self confine.Owner, grace time.Duration) (int, error) {
	list, err := c.List(ctx)
	if err != nil {
		return 0, err
	}
	var stale []string
	for _, s := range list {
		young := s.State == "running" && time.Since(time.Unix(s.Created, 0)) < grace
		if self.Stale(s.Labels) && !young {
			stale = append(stale, s.ID)
		}
	}
	return enginekit.RemoveEach(ctx, stale, c.remove)
}

// RemoveByClient removes every container created through a client with
// one of these labels ([Client.Label]).
func (c *Client) RemoveByClient(ctx context.Context, clients ...string) (int, error) {
	list, err := c.List(ctx)
	if err != nil {
		return 0, err
	}
	var theirs []string
	for _, s := range list {
		if slices.Contains(clients, s.Labels[labelClient]) {
			theirs = append(theirs, s.ID)
		}
	}
	return enginekit.RemoveEach(ctx, theirs, c.remove)
}

// deadlineCtx returns a context for clean-up work that must happen even when
// ctx has ended, bounded by d.
func deadlineCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
