package docker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// ImageWatch is how one caller of [Engine.Start] or [Engine.Ready] waits for
// the sandbox image when it is not there yet and Docker pulls it.
type ImageWatch = confine.ImageWatch

// EngineOptions configure an [Engine]. Zero values mean the defaults.
type EngineOptions struct {
	Host     string // Docker API; see [Options.Host]
	StateDir string // holds the sandboxes' socket folders; "" means $XDG_RUNTIME_DIR/codebridge, else a folder in /tmp
	Image    string // the configured image; "" lets [Client.EnsureImage] choose
	// Runtime is the OCI runtime containers run under, a name the daemon
	// knows (its daemon.json "runtimes"); "" is the daemon's default.
	Runtime string
	// Spec is the template of every container: its Image is filled in from
	// the resolved image; Command is required.
	Spec     confine.Spec
	Logger   *slog.Logger                   // nil discards
	Declined func(container, reason string) // see [Options.Declined]
	Getenv   func(string) string            // see [Options.Getenv]
}

// Engine starts containers from one spec on a Docker daemon it connects to
// on first use. While Docker is unavailable every Start tries again, so
// Docker may be started after codebridge; when Docker stops answering, the
// engine drops the connection, connects again on the next Start, and
// removes the containers the old connection left. It knows nothing of what
// runs in the containers.
type Engine struct {
	opts EngineOptions
	log  *slog.Logger

	connectMu sync.Mutex // serializes connecting; held while connecting

	bg   context.Context // ends with Close: the image job's context
	stop context.CancelFunc
	jobs sync.WaitGroup // the image job and the sweep running

	mu       sync.Mutex // protects following
	client   *Client
	image    string            // resolved image, "" until resolved
	live     map[*Box]struct{} // every container not yet removed
	orphans  []string          // client labels of dropped connections whose containers may remain
	closed   bool
	job      *confine.ImageJob // resolving the image, nil when none runs
	channels *string           // the sockets' folder, "" none; nil until known
}

// NewEngine returns an engine; it does not touch Docker until used.
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
// ([confine.Spec.Channel]). Closing it ends the stream, which unblocks every
// read and write on it and ends the container's process; the attach
// connection stays open until [Box.Remove], which watches the process end
// through it.
func (b *Box) Stream() io.ReadWriteCloser { return b.ct.Conn() }

// Done is closed when the container's output has ended.
func (b *Box) Done() <-chan struct{} { return b.ct.Done() }

// Stderr is what the container wrote to its stderr outside any protocol
// (at most 64 KiB), for diagnostics.
func (b *Box) Stderr() string { return b.ct.Stderr() }

// Exit waits for the container to stop and reports its exit code and whether
// it was killed for exceeding its memory limit. It has no deadline of its own.
// An error that matches [ErrUnavailable] means Docker stopped answering.
func (b *Box) Exit(ctx context.Context) (code int, oom bool, err error) {
	if b.e.isClosed() {
		return -1, false, errShutDown
	}
	code, err = b.ct.Wait(ctx)
	if err != nil {
		if ctx.Err() == nil && !b.e.checkAlive(ctx, b.ct.c) {
			return -1, false, unavailable(err, "lost the connection to Docker during the run (the next run connects again): %v", err)
		}
		return -1, false, err
	}
	oom, err = b.ct.OOMKilled(ctx)
	return code, oom, err
}

// Remove ends the container, which Docker then removes, and closes its
// streams. A container's process exits when its stream ends: Remove ends
// the stream and waits a moment for that, and only when the process does
// not exit (stuck in a call that holds the interpreter) asks Docker to
// remove the container. Once the engine is closed, which ended every
// container, it only closes the streams. Removing twice is not an error.
func (b *Box) Remove(ctx context.Context) error {
	var err error
	if !b.ct.End(ctx, b.e.bg.Done(), endTimeout) && !b.e.isClosed() {
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
// stream before it asks Docker to remove it.
const endTimeout = 2 * time.Second

// Ready connects to Docker, starts removing what dead codebridge processes
// left behind and resolves the image. Start calls it; servers call it at
// start-up to fail early, and only log its error. w says how the caller
// waits for an image being pulled.
func (e *Engine) Ready(ctx context.Context, w ImageWatch) error {
	_, _, err := e.ready(ctx, w)
	return err
}

// Info is what [Engine.Info] reports: the Docker daemon that answered.
type Info struct {
	Host        string // where it answered
	From        string // how the host was found, e.g. "DOCKER_HOST"
	Version     string // the daemon's version, e.g. "20.10.24"
	APIVersion  string // the Engine API version spoken, e.g. "1.41"
	Runtime     string // the OCI runtime containers run under
	SharesFiles bool   // see [Client.SharesFiles]
}

// Info connects to Docker if needed, without resolving the image, and says
// which daemon answered.
func (e *Engine) Info(ctx context.Context) (Info, error) {
	c, err := e.connected(ctx)
	if err != nil {
		return Info{}, err
	}
	rt := e.opts.Runtime
	if rt == "" {
		rt = c.Runtime()
	}
	return Info{Host: c.Host(), From: c.from, Version: c.Version(), APIVersion: c.APIVersion(), Runtime: rt, SharesFiles: c.SharesFiles()}, nil
}

// ImageExists connects to Docker if needed and reports whether the image is
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
	at := placement{runtime: e.opts.Runtime}
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
		ct.closeStreams() // it ends, and Docker removes it, as Close's do
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

// channelDir is where containers started through c get their sockets
// ([confine.Spec.Channel]): a folder in the state directory where Docker
// shares this host's files and the path is short enough for a socket, else
// "" (the containers use stdin and stdout).
func (e *Engine) channelDir(c *Client) string {
	if !c.SharesFiles() {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.channels != nil {
		return *e.channels
	}
	dir := confine.ChannelsDir(stateDir(e.opts.StateDir))
	none := ""
	switch err := confine.PrivateDir(dir); {
	case !confine.SocketsFit(dir):
		e.log.Info("the state directory's path is too long for a socket: the sandbox talks through Docker's attach stream", "dir", dir)
		e.channels = &none
	case err != nil:
		e.log.Warn("the sandbox talks through Docker's attach stream: its sockets need a folder only this user can reach", "err", err)
		e.channels = &none
	default:
		if err := confine.SweepChannels(dir); err != nil {
			e.log.Warn("removing old sandbox socket folders", "dir", dir, "err", err)
		}
		e.channels = &dir
	}
	return *e.channels
}

func stateDir(dir string) string {
	if dir != "" {
		return dir
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return filepath.Join(rt, "codebridge")
	}
	return filepath.Join(os.TempDir(), "codebridge-"+strconv.Itoa(os.Getuid()))
}

// Close ends every container of this engine by closing its stream, without
// a request to Docker: a container's process exits when its stream ends,
// and Docker removes a container once it has exited
// ([confine.Hardened.AutoRemove]), whether or not codebridge still runs. A
// container whose process does not read its stream (stuck in a call that
// holds the interpreter) ends when it next reads; the sweep at the next
// start is the last resort. Closing again does nothing.
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
			rctx, cancel := deadlineCtx(ctx, requestTimeout)
			if _, err := c.removeByClient(rctx, orphans...); err != nil {
				e.log.Info("removing containers of an earlier docker connection", "err", err)
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
	if c != nil && img != "" {
		return c, img, nil
	}
	c, img, job, err := e.connect(ctx)
	if err != nil || job == nil {
		return c, img, err
	}
	if img, err = job.Wait(ctx, w, imageLate); err != nil {
		return nil, "", err
	}
	return c, img, nil
}

// imageLate is the error of a caller whose limit passed while Docker
// prepared the image.
func imageLate(running time.Duration, last string) error {
	return unavailable(nil, "Docker has been preparing the sandbox image for %s, longer than this run's time limit, so the code did not run. The pull goes on in the background: run the code again in a minute (Docker's latest progress: %q)",
		running, last)
}

// connect returns a connected client and the image, or the job resolving the
// image, connecting first if needed. Connecting is serialized.
func (e *Engine) connect(ctx context.Context) (*Client, string, *confine.ImageJob, error) {
	e.connectMu.Lock()
	defer e.connectMu.Unlock()
	c, err := e.dial(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	img, job := e.imageJob(c)
	return c, img, job, nil
}

// imageJob returns the resolved image, or the job resolving it through c,
// starting one if none runs. A job that failed is not kept: the next caller
// starts another, so an image built or pulled meanwhile is found.
func (e *Engine) imageJob(c *Client) (string, *confine.ImageJob) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.image != "" {
		return e.image, nil
	}
	if e.job != nil {
		return "", e.job
	}
	j := confine.NewImageJob()
	e.job = j
	e.jobs.Go(func() {
		img, err := c.EnsureImage(e.bg, e.opts.Image, j.Report)
		e.mu.Lock()
		if err == nil && e.client == c {
			e.image = img
		}
		e.job = nil
		e.mu.Unlock()
		if err == nil {
			e.log.Info("sandbox ready", "docker", c.Host(), "image", img)
		}
		j.Finish(img, err)
	})
	return "", j
}

// dial returns the connected client, connecting first if needed. Call it
// with e.connectMu held.
func (e *Engine) dial(ctx context.Context) (*Client, error) {
	e.mu.Lock()
	c := e.client
	e.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := Connect(ctx, Options{Host: e.opts.Host, Logger: e.log, Declined: e.opts.Declined, Getenv: e.opts.Getenv})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	orphans := e.orphans
	e.mu.Unlock()
	if len(orphans) > 0 {
		if n, err := c.removeByClient(ctx, orphans...); err != nil {
			e.log.Warn("removing containers of the previous docker connection", "err", err)
		} else {
			e.log.Info("removed containers of the previous docker connection", "count", n)
			e.mu.Lock()
			e.orphans = e.orphans[len(orphans):]
			e.mu.Unlock()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		c.Close()
		return nil, errShutDown
	}
	e.client = c
	e.sweep(c) // under e.mu, before Close can wait for it
	return c, nil
}

// sweep removes, in the background, what dead codebridge processes left
// ([Client.RemoveStale]). Close cancels it. Call it with e.mu held.
func (e *Engine) sweep(c *Client) {
	e.jobs.Go(func() {
		if n, err := c.RemoveStale(e.bg); err != nil && e.bg.Err() == nil {
			e.log.Warn("removing containers of dead codebridge processes", "err", err)
		} else if n > 0 {
			e.log.Info("removed containers of dead codebridge processes", "count", n)
		}
	})
}

// checkAlive reports whether Docker still answers c, and drops the client
// when it does not, so the next run connects again.
func (e *Engine) checkAlive(ctx context.Context, c *Client) bool {
	pctx, cancel := deadlineCtx(ctx, pingTimeout)
	defer cancel()
	if err := c.do(pctx, "GET", "/_ping", nil, nil, nil); err != nil {
		e.log.Warn("docker stopped answering; will connect again", "host", c.Host(), "err", err)
		e.mu.Lock()
		if e.client == c {
			e.client = nil
			e.image = ""
			e.orphans = append(e.orphans, c.owner[labelClient])
		}
		e.mu.Unlock()
		c.Close()
		return false
	}
	return true
}
