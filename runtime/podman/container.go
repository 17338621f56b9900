package podman

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
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
	started time.Time   // when Start returned
	killed  atomic.Bool // Kill was called

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

// State is what [APIContainer.Inspect] reports.
type State struct {
	Status    string // created, running, exited, ...
	Running   bool
	ExitCode  int
	OOMKilled bool
}

// Start creates a container from s, attaches to its stdin, stdout and stderr,
// and starts it, with Podman's default seccomp profile ([Engine] gives
// codebridge's). Attaching before starting loses no output. On error
// nothing is left behind.
func (c *Client) Start(ctx context.Context, s confine.Spec) (*APIContainer, error) {
	return c.start(ctx, s, placement{})
}

func (c *Client) start(ctx context.Context, s confine.Spec, at placement) (*APIContainer, error) {
	s.Runtime = cmp.Or(s.Runtime, c.runtime) // the service's: Podman runs no other
	cs, err := newCreateSpec(s, c.owner, at.seccomp)
	if err != nil {
		return nil, err
	}
	ct, err := c.launcher().Launch(ctx, s, &cs, at.channelDir)
	if err != nil {
		return nil, err
	}
	ct.started = time.Now()
	return ct, nil
}

// launcher creates, attaches to and starts c's containers: Podman's part
// of the start the drivers share ([enginekit.Launcher]).
func (c *Client) launcher() *enginekit.Launcher[*APIContainer] {
	return &enginekit.Launcher[*APIContainer]{
		Name:     "Podman",
		API:      c.api(),
		Timeout:  requestTimeout,
		Log:      c.log,
		Declined: &c.declined,
		Created: func(id string, at *confine.Attached) *APIContainer {
			return &APIContainer{id: id, Attached: at, c: c}
		},
		Attach: c.attach,
	}
}

// attach opens a dedicated connection to the API and upgrades it to the
// container's multiplexed stdio stream ([restapi.Client.Attach]).
func (c *Client) attach(ctx context.Context, id string) (net.Conn, *bufio.Reader, error) {
	base := "http://d"
	if c.conn.URI.Scheme == "tcp" {
		base = "http://" + c.conn.URI.Host + strings.TrimSuffix(c.conn.URI.Path, "/")
	}
	q := url.Values{"stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}, "stream": {"true"}}
	u := base + "/v" + c.apiVersion + "/libpod/containers/" + url.PathEscape(id) + "/attach?" + q.Encode()
	// Small: it holds the answer's header, and the frames of the stream that
	// follows are read through it into the demultiplexer's own buffer (of a
	// sandbox that talks over its socket, there are none); a thousand
	// sessions would hold 64 MB with a 64 KiB one.
	return c.api().Attach(ctx, requestTimeout, c.conn.GetDialer, u, "/containers/"+id+"/attach", 4<<10)
}

// Wait blocks until the container has stopped and returns its exit code. It
// has no deadline of its own: give ctx one. It follows Podman's events
// instead of asking the wait endpoint, which in Podman 4.3 may never answer
// for a container removed while it waits: a container removes itself once
// it has exited ([confine.Hardened.AutoRemove]), and its "died" event stays.
func (ct *APIContainer) Wait(ctx context.Context) (int, error) {
	return ct.diedCode(ctx, true)
}

// isGone reports whether err says that the container does not exist: 404,
// or a 500 that says so while Podman removes it.
func isGone(err error) bool {
	return isStatus(err, http.StatusNotFound) || err != nil && strings.Contains(err.Error(), "no such container")
}

// diedCode returns the exit code of the container from the "died" event
// Podman recorded when it exited, waiting for that event if follow is set.
// Podman's file of events is shared by every Podman client of the host and
// rotated when it grows past its size (events_logfile_max_size): a stream
// that ends while the file is rotated is opened again, a few times, from
// the container's start, where the event may be by then.
func (ct *APIContainer) diedCode(ctx context.Context, follow bool) (int, error) {
	var err error
	for range eventsAttempts {
		var code int
		if code, err = ct.readDied(ctx, follow); err == nil || ctx.Err() != nil || !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return code, err
		}
		ct.c.log.Debug("podman's events ended without the container's exit; asking again", "container", enginekit.ShortID(ct.id), "err", err)
	}
	return -1, err
}

// eventsAttempts is how often [APIContainer.diedCode] reads Podman's events.
const eventsAttempts = 3

func (ct *APIContainer) readDied(ctx context.Context, follow bool) (int, error) {
	filters, _ := json.Marshal(map[string][]string{"container": {ct.id}, "event": {"died"}})
	// The events file holds every container's events: read only those
	// since this container started.
	since := cmp.Or(ct.started, time.Now().Add(-time.Hour)).Add(-time.Minute)
	q := url.Values{"stream": {strconv.FormatBool(follow)}, "filters": {string(filters)}, "since": {strconv.FormatInt(since.Unix(), 10)}}
	resp, err := ct.c.api().Request(ctx, http.MethodGet, "/events", q, nil)
	if err != nil {
		return -1, fmt.Errorf("waiting for container %s: %w", enginekit.ShortID(ct.id), err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Actor struct{ Attributes map[string]string }
		}
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return -1, fmt.Errorf("waiting for container %s: no exit code from Podman: %w", enginekit.ShortID(ct.id), err)
		}
		if code, err := strconv.Atoi(ev.Actor.Attributes["containerExitCode"]); err == nil {
			return code, nil
		}
	}
}

// Inspect returns the container's state.
func (ct *APIContainer) Inspect(ctx context.Context) (State, error) {
	return ct.c.inspect(ctx, ct.id)
}

func (c *Client) inspect(ctx context.Context, id string) (State, error) {
	var data struct {
		State struct {
			Status    string
			Running   bool
			ExitCode  int
			OOMKilled bool
		}
	}
	// A container that has exited is inspected while its cleanup (and,
	// under gVisor, runsc's teardown) holds its lock: as long as a list.
	if err := c.api().Do(ctx, listTimeout, http.MethodGet, "/containers/"+id+"/json", nil, nil, &data); err != nil {
		return State{}, fmt.Errorf("inspecting container %s: %w", enginekit.ShortID(id), err)
	}
	s := data.State
	return State{Status: s.Status, Running: s.Running, ExitCode: s.ExitCode, OOMKilled: s.OOMKilled}, nil
}

// OOMKilled reports whether the container, which must have exited, was
// killed for exceeding its memory limit. Podman's own flag is not always set
// (Podman 4.3 with runc on cgroup v1 never sets it), so an exit by SIGKILL
// (code 137) that [APIContainer.Kill] did not cause also counts: nothing else in
// a sandbox without capabilities sends SIGKILL to its process, except the
// code itself. A container already removed is judged by its exit code alone.
func (ct *APIContainer) OOMKilled(ctx context.Context) (bool, error) {
	st, err := ct.Inspect(ctx)
	if isGone(err) {
		code, err := ct.diedCode(ctx, false)
		return code == 137 && !ct.killed.Load(), err
	}
	if err != nil {
		return false, err
	}
	if st.Running {
		return false, nil
	}
	return st.OOMKilled || (st.ExitCode == 137 && !ct.killed.Load()), nil
}

// Kill sends SIGKILL to the container. A container that is not running (any
// more) is not an error.
func (ct *APIContainer) Kill(ctx context.Context) error {
	ct.killed.Store(true)
	err := ct.c.api().Do(ctx, requestTimeout, http.MethodPost, "/containers/"+ct.id+"/kill", url.Values{"signal": {"SIGKILL"}}, nil, nil)
	// Podman 4.3 answers 500 "container state improper" for a container that
	// has exited, 409 in later versions; and 500 "no such container" for one
	// its auto-remove is removing at that moment.
	if err == nil || isStatus(err, http.StatusConflict) || isGone(err) ||
		strings.Contains(err.Error(), "state improper") {
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
	return ct.c.remove(ctx, ct.id)
}

func (c *Client) remove(ctx context.Context, id string) error {
	q := url.Values{"force": {"true"}, "v": {"true"}, "timeout": {"0"}}
	var err error
	for attempt := 1; ; attempt++ {
		err = c.api().Do(ctx, requestTimeout, http.MethodDelete, "/containers/"+id, q, nil, nil)
		if err == nil || isStatus(err, http.StatusNotFound) {
			return nil
		}
		// Podman 4.3 fails a forced removal of a container that exits at that
		// moment ("could not be stopped: ... container state improper:
		// stopped"); a moment later the container is exited and removable.
		if attempt == 10 || !strings.Contains(err.Error(), "state improper") {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("removing container %s: %w", enginekit.ShortID(id), err)
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
	return fmt.Errorf("removing container %s: %w", enginekit.ShortID(id), err)
}

// Summary describes a container in [Client.List].
type Summary struct {
	ID        string            `json:"Id"`
	State     string            `json:"State"`
	Labels    map[string]string `json:"Labels"`
	StartedAt int64             `json:"StartedAt"` // unix seconds; 0 if never started
}

// List returns all containers (running or not) carrying [confine.LabelManaged],
// whichever codebridge process created them.
func (c *Client) List(ctx context.Context) ([]Summary, error) {
	filters, _ := json.Marshal(map[string][]string{"label": {confine.LabelManaged + "=true"}})
	q := url.Values{"all": {"true"}, "filters": {string(filters)}}
	var list []Summary
	if err := c.api().Do(ctx, listTimeout, http.MethodGet, "/containers/json", q, nil, &list); err != nil {
		return nil, fmt.Errorf("listing codebridge containers: %w", err)
	}
	return list, nil
}

// RemoveStale removes the containers left behind by codebridge processes on
// this host that no longer run, and returns how many it removed. Containers of
// live codebridge processes, including other instances sharing this Podman,
// and of other hosts are left alone, and so are those that started less than
// [staleGrace] ago: they end with their streams, and Podman removes them. It
// removes several at once, so a thousand leftovers do not hold up a start
// for minutes.
func (c *Client) RemoveStale(ctx context.Context) (int, error) {
	return c.removeStale(ctx, staleGrace)
}

// staleGrace is how long a running container of a codebridge that no longer
// runs is left to end by itself, as it does when its stream ends, before
// [Client.RemoveStale] removes it: the sweep is the last resort, and a start
// need not race containers that are removing themselves.
const staleGrace = time.Minute

func (c *Client) removeStale(ctx context.Context, grace time.Duration) (int, error) {
	list, err := c.List(ctx)
	if err != nil {
		return 0, err
	}
	var stale []string
	for _, s := range list {
		young := s.State == "running" && time.Since(time.Unix(s.StartedAt, 0)) < grace
		if c.self.Stale(s.Labels) && !young {
			stale = append(stale, s.ID)
		}
	}
	return enginekit.RemoveEach(ctx, stale, c.remove)
}

// deadlineCtx returns a context for clean-up work that must happen even when
// ctx has ended, bounded by d.
func deadlineCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
