package podman

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// EngineOptions configure an [Engine]. Zero values mean the defaults.
type EngineOptions struct {
	URI      string // Podman API; see [Options.URI]
	StateDir string // see [Options.StateDir]
	Image    string // the configured image; "" lets [Client.EnsureImage] choose
	// Spec is the template of every container: its Image is filled in from
	// the resolved image; Command is required. The engine adds its seccomp
	// profile ([confine.SeccompProfile]). Its Runtime is the Podman
	// service's: see [Options.Runtime].
	Spec     confine.Spec
	Logger   *slog.Logger                   // nil discards
	Declined func(container, reason string) // see [Options.Declined]
}

// Engine starts containers from one spec on a Podman it connects to on first
// use. While Podman is unavailable every Start tries again, so Podman may be
// installed or started after codebridge; when Podman stops answering, the
// engine drops the connection, connects again on the next Start, and removes
// the containers the old connection left. It knows nothing of what runs in
// the containers.
type Engine struct {
	opts EngineOptions
	log  *slog.Logger

	connectMu sync.Mutex // serializes connecting; held while connecting
	placeMu   sync.Mutex // serializes putting the seccomp profile on a Podman host

	channelOnce sync.Once
	channels    string // see channelDir

	bg   context.Context // ends with Close: the image job's context
	stop context.CancelFunc
	jobs sync.WaitGroup // the image job and the sweep running

	mu      sync.Mutex // protects following
	client  *Client
	image   string            // resolved image, "" until resolved
	live    map[*Box]struct{} // every container not yet removed
	orphans []string          // client labels of dropped connections whose containers may remain
	closed  bool
	job     *imageJob // resolving the image, nil when none runs
	profile string    // path of the seccomp profile last used
	// placed is where the profile was put on the Podman host of the
	// current connection, when that host does not share this one's files.
	placed struct {
		c    *Client
		path string
	}
}

// NewEngine returns an engine; it does not touch Podman until used.
func NewEngine(opts EngineOptions) *Engine {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bg, stop := context.WithCancel(context.Background())
	return &Engine{opts: opts, log: log, live: map[*Box]struct{}{}, bg: bg, stop: stop}
}

// Box is a started container of an [Engine].
type Box struct {
	ct *Container
	e  *Engine
}

// ID is the container's ID.
func (b *Box) ID() string { return b.ct.ID }

// Started is when the container started.
func (b *Box) Started() time.Time { return b.ct.started }

// Stream is the container's stdin and stdout, or the socket it connected to
// ([confine.Spec.Channel]). Closing it ends the stream, which unblocks every read and
// write on it and ends the container's process; the attach connection stays
// open until [Box.Remove], which watches the process end through it.
func (b *Box) Stream() io.ReadWriteCloser { return boxStream{b.ct} }

// Done is closed when the container's output has ended.
func (b *Box) Done() <-chan struct{} { return b.ct.Done() }

// Stderr is what the container wrote to its stderr outside any protocol
// (at most 64 KiB), for diagnostics.
func (b *Box) Stderr() string { return b.ct.Stderr() }

// Exit waits for the container to stop and reports its exit code and whether
// it was killed for exceeding its memory limit. It has no deadline of its own.
// An error that matches [ErrUnavailable] means Podman stopped answering.
func (b *Box) Exit(ctx context.Context) (code int, oom bool, err error) {
	if b.e.isClosed() {
		// Close ended the container; Podman, busy with others' shutdowns,
		// is not asked why.
		return -1, false, errShutDown
	}
	code, err = b.ct.Wait(ctx)
	if err != nil {
		if !b.e.checkAlive(ctx, b.ct.c) {
			return -1, false, unavailable(err, "lost the connection to Podman during the run (the next run connects again): %v", err)
		}
		return -1, false, err
	}
	oom, err = b.ct.OOMKilled(ctx)
	return code, oom, err
}

// Remove ends the container, which Podman then removes, and closes its
// streams. A container's process exits when its stream ends: Remove ends
// the stream and waits a moment for that, and only when the process does
// not exit (stuck in a call that holds the interpreter) asks Podman to kill
// and remove the container. Once the engine is closed, which ended every
// container, it only closes the streams. Removing twice is not an error.
func (b *Box) Remove(ctx context.Context) error {
	var err error
	if !b.ct.end(ctx, b.e.bg.Done(), endTimeout) && !b.e.isClosed() {
		err = b.ct.Remove(ctx)
	}
	b.ct.closeStreams()
	b.e.mu.Lock()
	delete(b.e.live, b)
	b.e.mu.Unlock()
	if err != nil {
		b.e.log.Warn("removing sandbox container", "container", shortID(b.ct.ID), "err", err)
	}
	return err
}

// endTimeout is how long [Box.Remove] waits for a container to end with its
// stream before it asks Podman to kill it.
const endTimeout = 2 * time.Second

// boxStream is a container's stream (attach or socket) as one ReadWriteCloser.
type boxStream struct{ ct *Container }

// Read and Write wait until the container has taken its stream.
func (s boxStream) Read(p []byte) (int, error) {
	r, _ := s.ct.stream()
	return r.Read(p)
}

func (s boxStream) Write(p []byte) (int, error) {
	_, w := s.ct.stream()
	return w.Write(p)
}

func (s boxStream) Close() error {
	s.ct.endStream()
	return nil
}

// Ready connects to Podman, starts removing what dead codebridge processes
// left behind and resolves the image. Start calls it; servers call it at start-up
// to fail early, and only log its error. w says how the caller waits for an
// image being pulled.
func (e *Engine) Ready(ctx context.Context, w ImageWatch) error {
	_, _, err := e.ready(ctx, w)
	return err
}

// Info is what [Engine.Info] reports: the Podman that answered.
type Info struct {
	URI        string // where it answered
	APIVersion string // its libpod API version, e.g. "4.3.1"
	Private    bool   // a 'podman system service' codebridge started
	// Runtime is the OCI runtime the containers run under, as Podman names
	// it; "" when Podman did not say.
	Runtime string
}

// Info connects to Podman if needed, without resolving the image, and says
// which Podman answered and, asking it when no runtime was chosen
// ([confine.Spec.Runtime]), which OCI runtime it runs.
func (e *Engine) Info(ctx context.Context) (Info, error) {
	c, err := e.connected(ctx)
	if err != nil {
		return Info{}, err
	}
	info := Info{URI: c.URI(), APIVersion: c.APIVersion(), Private: c.Private(), Runtime: c.Runtime()}
	if info.Runtime == "" {
		name, path, err := c.ociRuntime(ctx)
		if err != nil {
			e.log.Info("podman did not say which OCI runtime it runs", "err", err)
		}
		info.Runtime = cmp.Or(name, path)
	}
	return info, nil
}

// ImageExists connects to Podman if needed and reports whether the image is
// in its store, without pulling it.
func (e *Engine) ImageExists(ctx context.Context, image string) (bool, error) {
	c, err := e.connected(ctx)
	if err != nil {
		return false, err
	}
	return c.ImageExists(ctx, image)
}

// connected returns the connected client, connecting first if needed.
func (e *Engine) connected(ctx context.Context) (*Client, error) {
	if e.isClosed() {
		return nil, errShutDown
	}
	e.connectMu.Lock()
	defer e.connectMu.Unlock()
	return e.dial(ctx)
}

// Start starts a container from the engine's spec with its streams attached.
// w says how the caller waits for an image being pulled.
func (e *Engine) Start(ctx context.Context, w ImageWatch) (*Box, error) {
	c, img, err := e.ready(ctx, w)
	if err != nil {
		return nil, err
	}
	spec := e.opts.Spec
	spec.Image = img
	var at placement
	if at.seccomp, err = e.seccomp(ctx, c, img); err != nil {
		return nil, err
	}
	if spec.Channel != "" {
		at.channelDir = e.channelDir(c)
	}
	ct, err := c.start(ctx, spec, at)
	if err != nil {
		if ctx.Err() == nil {
			e.checkAlive(ctx, c)
		}
		return nil, err
	}
	b := &Box{ct: ct, e: e}
	e.mu.Lock()
	closed := e.closed
	if !closed {
		e.live[b] = struct{}{}
	}
	e.mu.Unlock()
	if closed {
		ct.closeStreams() // it ends, and Podman removes it, as Close's do
		return nil, errShutDown
	}
	return b, nil
}

// errShutDown is what an engine closed answers.
var errShutDown = errors.New("the sandbox is shut down")

func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// seccomp returns the path, on the Podman host, of the sandbox's seccomp
// profile for containers started through c. Where the Podman service reads
// this host's files, the profile is a file in the state directory, checked
// and written again if it is gone or differs (a state directory in /tmp or
// $XDG_RUNTIME_DIR may be cleaned while codebridge runs) on every start: a
// read of a small file. Elsewhere (ssh, podman machine) it is put on the
// Podman host through the API once per connection. Failing either way is an
// error: a sandbox does not silently lose the profile.
func (e *Engine) seccomp(ctx context.Context, c *Client, image string) (string, error) {
	if !SharesFiles(c.URI()) {
		e.placeMu.Lock() // concurrent starts place it once
		defer e.placeMu.Unlock()
		e.mu.Lock()
		placed := e.placed
		e.mu.Unlock()
		if placed.c == c {
			return placed.path, nil
		}
		path, err := c.placeSeccompProfile(ctx, image, e.opts.Spec.Runtime)
		if err != nil {
			return "", fmt.Errorf("%w; the sandbox does not start without its seccomp profile", err)
		}
		e.log.Info("put the sandbox's seccomp profile on the Podman host", "podman", c.URI(), "path", path)
		e.mu.Lock()
		e.placed.c, e.placed.path = c, path
		e.profile = path
		e.mu.Unlock()
		return path, nil
	}
	path, err := confine.WriteSeccompProfile(stateDir(e.opts.StateDir), e.opts.Spec.Runtime)
	if err != nil {
		return "", fmt.Errorf("%w: set a state directory codebridge can write", err)
	}
	e.mu.Lock()
	e.profile = path
	e.mu.Unlock()
	return path, nil
}

// channelDir is where containers started through c get their sockets
// ([confine.Spec.Channel]): a folder in the state directory where Podman shares this
// host's files and the path is short enough for a socket, else "" (the
// containers use stdin and stdout).
func (e *Engine) channelDir(c *Client) string {
	if !SharesFiles(c.URI()) {
		return ""
	}
	e.channelOnce.Do(func() {
		dir := confine.ChannelsDir(stateDir(e.opts.StateDir))
		if !confine.SocketsFit(dir) {
			e.log.Info("the state directory's path is too long for a socket: the sandbox talks through Podman's attach stream", "dir", dir)
			return
		}
		if err := confine.PrivateDir(dir); err != nil {
			e.log.Warn("the sandbox talks through Podman's attach stream: its sockets need a folder only this user can reach", "err", err)
			return
		}
		if err := confine.SweepChannels(dir); err != nil {
			e.log.Warn("removing old sandbox socket folders", "dir", dir, "err", err)
		}
		e.channels = dir
	})
	return e.channels
}

// Close ends every container of this engine by closing its stream and stops
// a Podman service it started, without a request to Podman: a container's
// process exits when its stream ends, and Podman removes a container once it
// has exited ([confine.Hardened.AutoRemove]), whether or not codebridge still runs.
// Asking Podman would cost seconds when many codebridge processes stop at
// once (an editor quitting), longer than a client waits before its signals.
// A container whose process does not read its stream (stuck in a call that
// holds the interpreter) ends when it next reads; the sweep at the next start
// is the last resort. Closing again does nothing.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.stop()
	c := e.client
	orphans := e.orphans
	boxes := make([]*Box, 0, len(e.live))
	for b := range e.live {
		boxes = append(boxes, b)
	}
	e.live = map[*Box]struct{}{}
	e.mu.Unlock()

	for _, b := range boxes {
		b.ct.closeStreams()
	}
	e.jobs.Wait() // the image job and the sweep end with e.bg
	if c != nil {
		if len(orphans) > 0 {
			// Containers of a connection that died: their streams died with
			// it, so they end and are removed; this is in case they did not.
			rctx, cancel := deadlineCtx(ctx, requestTimeout)
			if _, err := removeByClient(rctx, c, orphans...); err != nil {
				e.log.Info("removing containers of an earlier podman connection", "err", err)
			}
			cancel()
		}
		c.Close()
	}
	return nil
}

// ready returns a connected client and the image, connecting first if needed.
func (e *Engine) ready(ctx context.Context, w ImageWatch) (*Client, string, error) {
	e.mu.Lock()
	c, img, closed := e.client, e.image, e.closed
	e.mu.Unlock()
	if closed {
		return nil, "", errShutDown
	}
	if c != nil && img != "" && !c.serviceExited() {
		return c, img, nil
	}

	c, img, job, err := e.connect(ctx)
	if err != nil || job == nil {
		return c, img, err
	}
	if img, err = job.wait(ctx, w); err != nil {
		return nil, "", err
	}
	return c, img, nil
}

// connect returns a connected client and the image, or the job resolving the
// image, connecting first if needed. Connecting is serialized.
func (e *Engine) connect(ctx context.Context) (*Client, string, *imageJob, error) {
	e.connectMu.Lock()
	defer e.connectMu.Unlock()
	c, err := e.dial(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	e.mu.Lock()
	img := e.image
	e.mu.Unlock()
	if img != "" {
		return c, img, nil, nil
	}
	img, job := e.imageJob(c)
	return c, img, job, nil
}

// dial returns the connected client, connecting first if needed. Call it
// with e.connectMu held.
func (e *Engine) dial(ctx context.Context) (*Client, error) {
	e.mu.Lock()
	c := e.client
	e.mu.Unlock()
	if c != nil && c.serviceExited() {
		e.log.Warn("the podman service codebridge started has exited; starting another")
		e.dropClient(c)
		c = nil
	}
	if c == nil {
		var err error
		c, err = Connect(ctx, Options{URI: e.opts.URI, StateDir: e.opts.StateDir, Runtime: e.opts.Spec.Runtime, Logger: e.log, Declined: e.opts.Declined})
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		orphans := e.orphans
		e.mu.Unlock()
		if len(orphans) > 0 {
			// Containers started through a connection that died keep running
			// under conmon; no one else would remove them.
			if n, err := removeByClient(ctx, c, orphans...); err != nil {
				e.log.Warn("removing containers of the previous podman connection", "err", err)
			} else {
				e.log.Info("removed containers of the previous podman connection", "count", n)
				e.mu.Lock()
				e.orphans = e.orphans[len(orphans):]
				e.mu.Unlock()
			}
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			c.Close()
			return nil, errShutDown
		}
		e.client = c
		e.sweep(c) // under e.mu, before Close can wait for it
		e.mu.Unlock()
	}
	return c, nil
}

// sweep removes, in the background, what dead codebridge processes left
// ([Client.RemoveStale]): a thousand leftovers take a minute to remove, which
// no run should wait for. Close cancels it. Call it with e.mu held.
func (e *Engine) sweep(c *Client) {
	e.jobs.Go(func() {
		if n, err := c.RemoveStale(e.bg); err != nil && e.bg.Err() == nil {
			e.log.Warn("removing containers of dead codebridge processes", "err", err)
		} else if n > 0 {
			e.log.Info("removed containers of dead codebridge processes", "count", n)
		}
	})
}

// checkAlive reports whether Podman still answers c, and drops the client
// when it does not, so the next run connects again.
func (e *Engine) checkAlive(ctx context.Context, c *Client) bool {
	pctx, cancel := deadlineCtx(ctx, pingTimeout)
	defer cancel()
	if err := c.do(pctx, pingTimeout, "GET", "/_ping", nil, nil, nil); err != nil {
		e.log.Warn("podman stopped answering; will connect again", "uri", c.URI(), "err", err)
		e.dropClient(c)
		return false
	}
	return true
}

func (e *Engine) dropClient(c *Client) {
	e.mu.Lock()
	if e.client == c {
		e.client = nil
		e.image = ""
		e.orphans = append(e.orphans, c.owner[labelClient])
	}
	e.mu.Unlock()
	c.Close()
}

// removeOwned removes every container created through c.
func removeOwned(ctx context.Context, c *Client) (int, error) {
	return removeByClient(ctx, c, c.owner[labelClient])
}

// removeByClient removes, through c, every container created through a
// client with one of these labels.
func removeByClient(ctx context.Context, c *Client, clients ...string) (int, error) {
	list, err := c.List(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, sm := range list {
		if !slices.Contains(clients, sm.Labels[labelClient]) {
			continue
		}
		if err := c.remove(ctx, sm.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// serviceExited reports whether c's private Podman service has died.
func (c *Client) serviceExited() bool {
	if c.svc == nil {
		return false
	}
	select {
	case <-c.svc.exited:
		return true
	default:
		return false
	}
}
