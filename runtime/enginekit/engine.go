// Package enginekit is what the engine drivers under runtime/ share: chiefly
// the life cycle of sandbox containers on a local engine (runtime/podman,
// runtime/docker), whose Engines embed a [Lifecycle] and so are
// runtime/sandbox Engines. A [Lifecycle] connects to its engine on first use and again
// after the engine stops answering, resolves the sandbox image once for
// every caller ([confine.ImageJob]), keeps the set of live containers and
// ends them all on [Lifecycle.Close] without a request to the engine, gives
// containers exit turns so that a mass exit does not overwhelm the engine
// ([Options.ExitDelay]), removes in the background what dead codebridge
// processes left behind, and tells once per connection of a container that
// could not connect to its socket ([Declined]). A driver keeps only what
// differs between engines: finding and connecting to its engine and its
// requests, behind [Conn]. runtime/kube, whose pods live on a cluster
// rather than a local engine, shares only the set of live sandboxes that
// closes once ([Live]). Every driver describes its engine as a
// [Description].
//
// runtime/enginetest is the conformance suite every driver runs against
// its real engine.
package enginekit

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
)

// Conn is a driver's connection to its engine, as a [Lifecycle] uses it. A
// request has a deadline of its own (the driver's); ctx may shorten it.
type Conn interface {
	// Launch creates a container of spec (its Image set), attaches to its
	// streams and starts it, with the sandbox's seccomp profile. When
	// channelDir is not "", the container gets its socket's folder there
	// ([confine.NewChannel]). On error nothing is left behind.
	Launch(ctx context.Context, spec confine.Spec, channelDir string) (APIContainer, error)
	// ImageExists and Pull are the engine's image store, from which the
	// Lifecycle resolves the image containers use ([confine.ResolveImage]).
	confine.ImageStore
	// RemoveStale removes the containers of codebridge processes of this
	// host that no longer run ([confine.Owner.Stale]) and says how many.
	RemoveStale(ctx context.Context) (int, error)
	// RemoveByClient removes the containers created through the connections
	// labelled so ([Conn.Label]) and says how many.
	RemoveByClient(ctx context.Context, labels ...string) (int, error)
	// Ping asks whether the engine still answers.
	Ping(ctx context.Context) error
	// Gone says, without a request, why the connection can no longer be
	// used (e.g. the engine's service it started has exited), or "".
	Gone() string
	// Label names this connection on the containers created through it.
	Label() string
	// Endpoint is where the engine answered, for logs.
	Endpoint() string
	// SharesFiles reports whether the engine runs on this host and sees
	// its files, so that containers can get a socket in a folder here.
	SharesFiles() bool
	// Close closes the connection.
	Close() error
}

// APIContainer is a container as the engine's API knows it, which a driver
// created, attached to and started through a [Conn]: what a [Container]
// wraps.
type APIContainer interface {
	ID() string
	Started() time.Time
	// Streams are its streams as the driver attached them.
	Streams() *confine.Attached
	// CloseStreams ends its stream and closes its attach connection,
	// without a request to the engine, and lets go of what the driver
	// holds for them. Its process exits when its stream ends.
	CloseStreams()
	// Wait waits for it to stop and returns its exit code.
	Wait(ctx context.Context) (int, error)
	// OOMKilled reports whether it, once stopped, was killed for exceeding
	// its memory limit.
	OOMKilled(ctx context.Context) (bool, error)
	// Remove asks the engine to kill and remove it and closes its streams;
	// a container gone is not an error.
	Remove(ctx context.Context) error
}

// Options configure a [Lifecycle]. Zero values mean the defaults.
type Options struct {
	Name string // the engine as people call it, e.g. "Podman": in logs and errors
	// Image is the configured image and how to build the default one,
	// which the Lifecycle resolves once for every caller
	// ([confine.ResolveImage]).
	Image    confine.ImagePolicy
	StateDir string // holds the sandboxes' socket folders; "" means [StateDir]'s default
	// Spec is the template of every container: its Image is filled in from
	// the resolved image; Command is required.
	Spec   confine.Spec
	Logger *slog.Logger // nil discards
	// ExitDelay names an environment variable that tells each container
	// how many seconds to wait, once its stream is closed rather than shut
	// down ([Container.Stream]), before its process exits: every container that
	// exits costs the engine work (Podman a 'podman container cleanup'
	// process), and the hundreds of containers of a codebridge that shuts
	// down or dies, ending at once, would overwhelm the machine. Live
	// containers get distinct turns, ExitInterval apart. "" means none.
	ExitDelay    string
	ExitInterval time.Duration // 0 means [DefaultExitInterval]
	ExitBurst    int           // how many may end at once before the rest wait for their turns; 0 means [DefaultExitBurst]
}

// DefaultExitInterval is the time between the exits of a codebridge's
// containers when their streams all close at once ([Options.ExitDelay]):
// about as many a second as Podman 4.3 cleans up on two busy cores
// (docs/performance.md).
const DefaultExitInterval = 250 * time.Millisecond

// DefaultExitBurst is how many containers may end at once before the rest
// wait for their turns ([Container.Remove]).
const DefaultExitBurst = 8

// ErrShutDown is what an engine closed answers.
var ErrShutDown = errors.New("the sandbox is shut down")

// Lifecycle starts containers from one spec on an engine it connects to on
// first use ([Conn]). While the engine is unavailable every Start tries
// again, so it may be installed or started after codebridge; when it stops
// answering, the engine drops the connection, connects again on the next
// Start, and removes the containers the old connection left. It knows
// nothing of what runs in the containers.
type Lifecycle struct {
	opts    Options
	connect func(ctx context.Context) (Conn, error)
	log     *slog.Logger

	connectMu sync.Mutex // serializes connecting; held while connecting

	bg   context.Context // ends with Close: the image job's context
	stop context.CancelFunc
	jobs sync.WaitGroup // the image job and the sweep running

	live Live[*Container] // every container not yet removed; closed by Close

	mu       sync.Mutex // protects following
	conn     Conn
	image    string            // resolved image, "" until resolved
	turns    []bool            // exit turns taken by live containers ([Options.ExitDelay])
	nextExit time.Time         // when the next container ending may exit at once ([Lifecycle.depart])
	orphans  []string          // labels of dropped connections whose containers may remain
	job      *confine.ImageJob // resolving the image, nil when none runs
	channels *string           // the sockets' folder, "" none; nil until known
}

// New returns an engine that connects with connect; it does not touch the
// engine until used.
func New(connect func(ctx context.Context) (Conn, error), opts Options) *Lifecycle {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bg, stop := context.WithCancel(context.Background())
	return &Lifecycle{opts: opts, connect: connect, log: log, bg: bg, stop: stop}
}

// Container is a started sandbox container of a [Lifecycle]: the
// sandbox.Container of runtime/podman and runtime/docker.
type Container struct {
	ct   APIContainer
	at   *confine.Attached
	conn Conn // the connection it was started through
	e    *Lifecycle
	turn int // its exit turn; -1 when none

	ending  sync.Once // ends the stream: endStream
	delayed bool      // the stream was closed, not shut down: the process exits at its turn; set in ending
}

// ID is the container's ID.
func (b *Container) ID() string { return b.ct.ID() }

// Started is when the container started.
func (b *Container) Started() time.Time { return b.ct.Started() }

// APIContainer is the driver's container under it.
func (b *Container) APIContainer() APIContainer { return b.ct }

// Turn is the container's exit turn ([Options.ExitDelay]), -1 when none.
func (b *Container) Turn() int {
	b.e.mu.Lock()
	defer b.e.mu.Unlock()
	return b.turn
}

// Stream is the container's stdin and stdout, or the socket it connected to
// ([confine.Spec.Channel]). Closing it ends the stream, which unblocks every
// read and write on it and ends the container's process at once (a socket is
// shut down, not closed, until [Container.Remove]); the attach connection stays
// open until [Container.Remove], which watches the process end through it.
func (b *Container) Stream() io.ReadWriteCloser { return containerStream{b.at.Conn(), b} }

// Done is closed when the container's output has ended.
func (b *Container) Done() <-chan struct{} { return b.at.Done() }

// Stderr is what the container wrote to its stderr outside any protocol
// (at most 64 KiB), for diagnostics.
func (b *Container) Stderr() string { return b.at.Stderr() }

// Exit waits for the container to stop and reports its exit code and whether
// it was killed for exceeding its memory limit. It has no deadline of its own.
// An error that matches [confine.ErrUnavailable] means the engine stopped
// answering.
func (b *Container) Exit(ctx context.Context) (code int, oom bool, err error) {
	if b.e.live.Closed() {
		// Close ended the container; the engine, busy with others'
		// shutdowns, is not asked why.
		return -1, false, ErrShutDown
	}
	if code, err = b.ct.Wait(ctx); err != nil {
		code = -1
	} else {
		oom, err = b.ct.OOMKilled(ctx)
	}
	if err != nil && ctx.Err() == nil && !b.e.checkAlive(ctx, b.conn) {
		return -1, false, confine.Unavailable(err, "lost the connection to %s during the run (the next run connects again): %v", b.e.opts.Name, err)
	}
	return code, oom, err
}

// Remove ends the container, which the engine then removes, and closes its
// streams. A container's process exits when its stream ends: Remove ends
// the stream and waits a moment for that, and only when the process does
// not exit (stuck in a call that holds the interpreter) asks the engine to
// kill and remove the container. Once the engine is closed, which ended
// every container, it only closes the streams. Removing twice is not an
// error.
//
// When many containers end together (the sessions of a server that stops,
// or that expire at once), each beyond a few a second is told to exit at its
// turn ([Options.ExitDelay]) instead, and Remove does not wait for it.
func (b *Container) Remove(ctx context.Context) error {
	b.endStream()
	var err error
	if !b.delayed && !b.at.End(ctx, b.e.bg.Done(), endTimeout) && !b.e.live.Closed() {
		err = b.ct.Remove(ctx)
	}
	b.ct.CloseStreams()
	b.e.live.Remove(b)
	b.e.mu.Lock()
	b.e.freeTurn(b)
	b.e.mu.Unlock()
	if err != nil {
		b.e.log.Warn("removing sandbox container", "container", ShortID(b.ct.ID()), "err", err)
	}
	return err
}

// endTimeout is how long [Container.Remove] waits for a container to end with its
// stream before it asks the engine to kill it.
const endTimeout = 2 * time.Second

// endStream ends b's stream, once. It shuts the socket down, so that the
// process exits at once, unless more containers are ending than the engine
// cleans up after (a burst at once, then one an interval): then it closes
// the socket, as codebridge's end does, and the process exits at its turn.
// Over the attach stream the process cannot tell, and exits at once.
func (b *Container) endStream() {
	b.ending.Do(func() {
		if b.turn >= 0 && b.at.Socket() && !b.e.depart() {
			b.delayed = true
			b.ct.CloseStreams()
			return
		}
		b.at.EndStream()
	})
}

// depart reports whether a container ending now may exit at once: a burst
// at once, then one an exit interval.
func (e *Lifecycle) depart() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	interval := cmp.Or(e.opts.ExitInterval, DefaultExitInterval)
	if e.nextExit.Before(now) {
		e.nextExit = now
	}
	if e.nextExit.Sub(now) > time.Duration(cmp.Or(e.opts.ExitBurst, DefaultExitBurst)-1)*interval {
		return false
	}
	e.nextExit = e.nextExit.Add(interval)
	return true
}

// containerStream is a container's stream ([confine.Attached.Conn]) whose Close
// ends it as [Container.endStream] does.
type containerStream struct {
	io.ReadWriteCloser
	b *Container
}

func (s containerStream) Close() error {
	s.b.endStream()
	return nil
}

// Ready connects to the engine, starts removing what dead codebridge
// processes left behind and resolves the image. Start calls it; servers
// call it at start-up to fail early, and only log its error. w says how the
// caller waits for an image being pulled.
func (e *Lifecycle) Ready(ctx context.Context, w sandbox.Wait) error {
	_, _, err := e.ready(ctx, confine.ImageWatch(w))
	return err
}

// Connected returns the connection, connecting first if needed, without
// resolving the image.
func (e *Lifecycle) Connected(ctx context.Context) (Conn, error) {
	if e.live.Closed() {
		return nil, ErrShutDown
	}
	e.connectMu.Lock()
	defer e.connectMu.Unlock()
	return e.dial(ctx)
}

// HasImage connects to the engine if needed and reports whether the image
// is in its store, without pulling it.
func (e *Lifecycle) HasImage(ctx context.Context, image string) (bool, error) {
	c, err := e.Connected(ctx)
	if err != nil {
		return false, err
	}
	return c.ImageExists(ctx, image)
}

// Conn is the current connection, or nil when there is none.
func (e *Lifecycle) Conn() Conn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.conn
}

// Start starts a container from the engine's spec with its streams attached:
// a [*Container]. w says how the caller waits for an image being pulled.
func (e *Lifecycle) Start(ctx context.Context, w sandbox.Wait) (sandbox.Container, error) {
	b, err := e.start(ctx, confine.ImageWatch(w))
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return b, nil
}

func (e *Lifecycle) start(ctx context.Context, w confine.ImageWatch) (*Container, error) {
	c, img, err := e.ready(ctx, w)
	if err != nil {
		return nil, err
	}
	spec := e.opts.Spec
	spec.Image = img
	channelDir := ""
	if spec.Channel != "" {
		channelDir = e.channelDir(c)
	}
	b := &Container{conn: c, e: e, turn: -1}
	if e.opts.ExitDelay != "" {
		e.mu.Lock()
		b.turn = e.takeTurn()
		e.mu.Unlock()
		spec.Env = maps.Clone(spec.Env)
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		delay := time.Duration(b.turn) * cmp.Or(e.opts.ExitInterval, DefaultExitInterval)
		spec.Env[e.opts.ExitDelay] = strconv.FormatFloat(delay.Seconds(), 'f', -1, 64)
	}
	ct, err := c.Launch(ctx, spec, channelDir)
	if err != nil {
		e.mu.Lock()
		e.freeTurn(b)
		e.mu.Unlock()
		if ctx.Err() == nil {
			e.checkAlive(ctx, c)
		}
		return nil, err
	}
	b.ct, b.at = ct, ct.Streams()
	if !e.live.Add(b) {
		ct.CloseStreams() // it ends, and the engine removes it, as Close's do
		return nil, ErrShutDown
	}
	return b, nil
}

// takeTurn returns the first exit turn no live container has. Call it with
// e.mu held.
func (e *Lifecycle) takeTurn() int {
	i := slices.Index(e.turns, false)
	if i < 0 {
		i = len(e.turns)
		e.turns = append(e.turns, true)
	}
	e.turns[i] = true
	return i
}

// freeTurn gives b's exit turn back. Call it with e.mu held.
func (e *Lifecycle) freeTurn(b *Container) {
	if b.turn >= 0 && b.turn < len(e.turns) {
		e.turns[b.turn] = false
	}
	b.turn = -1
}

// channelDir is where containers started through c get their sockets
// ([confine.Spec.Channel]): a folder in the state directory where the engine
// shares this host's files and the path is short enough for a socket, else
// "" (the containers use stdin and stdout).
func (e *Lifecycle) channelDir(c Conn) string {
	if !c.SharesFiles() {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.channels != nil {
		return *e.channels
	}
	dir := confine.ChannelsDir(StateDir(e.opts.StateDir))
	none := ""
	e.channels = &none
	if !confine.SocketsFit(dir) {
		e.log.Info("the state directory's path is too long for a socket: the sandbox talks through "+e.opts.Name+"'s attach stream", "dir", dir)
		return ""
	}
	if err := confine.PrivateDir(dir); err != nil {
		e.log.Warn("the sandbox talks through "+e.opts.Name+"'s attach stream: its sockets need a folder only this user can reach", "err", err)
		return ""
	}
	if err := confine.SweepChannels(dir); err != nil {
		e.log.Warn("removing old sandbox socket folders", "dir", dir, "err", err)
	}
	e.channels = &dir
	return dir
}

// StateDir is the folder of codebridge's state on this host: dir, else
// $XDG_RUNTIME_DIR/codebridge, else a folder of this user's in the
// temporary directory.
func StateDir(dir string) string {
	if dir != "" {
		return dir
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return filepath.Join(rt, "codebridge")
	}
	return filepath.Join(os.TempDir(), "codebridge-"+strconv.Itoa(os.Getuid()))
}

// Close ends every container of this engine by closing its stream and
// closes the connection, without a request to the engine: a container's
// process exits when its stream ends, after its exit turn
// ([Options.ExitDelay]), and the engine removes a container once it has
// exited ([confine.Hardened.AutoRemove]), whether or not codebridge still
// runs. Asking the engine would cost seconds when many codebridge processes
// stop at once (an editor quitting), longer than a client waits before its
// signals; and each container's exit costs the engine work, hence the
// turns, which also apply when codebridge is killed. A container whose
// process does not read its stream (stuck in a call that holds the
// interpreter) ends when it next reads; the sweep at the next start is the
// last resort. Closing again does nothing.
func (e *Lifecycle) Close(ctx context.Context) error {
	boxes, first := e.live.Close()
	if !first {
		return nil
	}
	e.stop()
	e.mu.Lock() // after e.live.Close: a connection kept is seen here ([Lifecycle.dial])
	c := e.conn
	orphans := e.orphans
	e.mu.Unlock()

	for _, b := range boxes {
		b.ct.CloseStreams()
	}
	e.jobs.Wait() // the image job and the sweep end with e.bg
	if c != nil {
		if len(orphans) > 0 {
			// Containers of a connection that died: their streams died with
			// it, so they end and are removed; this is in case they did not.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
			if _, err := c.RemoveByClient(rctx, orphans...); err != nil {
				e.log.Info("removing containers of an earlier "+e.lower()+" connection", "err", err)
			}
			cancel()
		}
		c.Close()
	}
	return nil
}

// closeTimeout bounds what Close asks of the engine.
const closeTimeout = 30 * time.Second

func (e *Lifecycle) lower() string { return strings.ToLower(e.opts.Name) }

// ready returns a connection and the image, connecting first if needed.
func (e *Lifecycle) ready(ctx context.Context, w confine.ImageWatch) (Conn, string, error) {
	if e.live.Closed() {
		return nil, "", ErrShutDown
	}
	e.mu.Lock()
	c, img := e.conn, e.image
	e.mu.Unlock()
	if c != nil && img != "" && c.Gone() == "" {
		return c, img, nil
	}
	c, img, job, err := e.connectImage(ctx)
	if err != nil || job == nil {
		return c, img, err
	}
	if img, err = job.Wait(ctx, w, e.imageLate); err != nil {
		return nil, "", err
	}
	return c, img, nil
}

// imageLate is the error of a caller whose limit passed while the engine
// prepared the image.
func (e *Lifecycle) imageLate(running time.Duration, last string) error {
	return confine.Unavailable(nil, "%s has been preparing the sandbox image for %s, longer than this run's time limit, so the code did not run. The pull goes on in the background: run the code again in a minute (%s's latest progress: %q)",
		e.opts.Name, running, e.opts.Name, last)
}

// connectImage returns a connection and the image, or the job resolving the
// image, connecting first if needed. Connecting is serialized.
func (e *Lifecycle) connectImage(ctx context.Context) (Conn, string, *confine.ImageJob, error) {
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
func (e *Lifecycle) imageJob(c Conn) (string, *confine.ImageJob) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.image != "" {
		return e.image, nil
	}
	if e.job != nil {
		return "", e.job
	}
	j := confine.NewImageJob()
	if e.live.Closed() { // under e.mu: no job starts once Close waits for them
		j.Finish("", ErrShutDown)
		return "", j
	}
	e.job = j
	e.jobs.Go(func() {
		img, err := confine.ResolveImage(e.bg, c, e.opts.Image, j.Report, e.log)
		e.mu.Lock()
		if err == nil && e.conn == c {
			e.image = img
		}
		e.job = nil
		e.mu.Unlock()
		if err == nil {
			e.log.Info("sandbox ready", e.lower(), c.Endpoint(), "image", img)
		}
		j.Finish(img, err)
	})
	return "", j
}

// dial returns the connection, connecting first if needed. Call it with
// e.connectMu held.
func (e *Lifecycle) dial(ctx context.Context) (Conn, error) {
	e.mu.Lock()
	c := e.conn
	e.mu.Unlock()
	if c != nil {
		gone := c.Gone()
		if gone == "" {
			return c, nil
		}
		e.log.Warn(gone + "; connecting again")
		e.drop(c)
	}
	c, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	orphans := e.orphans
	e.mu.Unlock()
	if len(orphans) > 0 {
		// Containers started through a connection that died may keep
		// running; no one else would remove them.
		if n, err := c.RemoveByClient(ctx, orphans...); err != nil {
			e.log.Warn("removing containers of the previous "+e.lower()+" connection", "err", err)
		} else {
			e.log.Info("removed containers of the previous "+e.lower()+" connection", "count", n)
			e.mu.Lock()
			e.orphans = e.orphans[len(orphans):]
			e.mu.Unlock()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live.Closed() { // under e.mu, so that Close sees e.conn if kept
		c.Close()
		return nil, ErrShutDown
	}
	e.conn = c
	e.sweep(c) // under e.mu, before Close can wait for it
	return c, nil
}

// sweep removes, in the background, what dead codebridge processes left
// ([Conn.RemoveStale]): a thousand leftovers take a minute to remove, which
// no run should wait for. Close cancels it. Call it with e.mu held.
func (e *Lifecycle) sweep(c Conn) {
	e.jobs.Go(func() {
		if n, err := c.RemoveStale(e.bg); err != nil && e.bg.Err() == nil {
			e.log.Warn("removing containers of dead codebridge processes", "err", err)
		} else if n > 0 {
			e.log.Info("removed containers of dead codebridge processes", "count", n)
		}
	})
}

// checkAlive reports whether the engine still answers c, and drops the
// connection when it does not, so the next run connects again.
func (e *Lifecycle) checkAlive(ctx context.Context, c Conn) bool {
	if err := c.Ping(context.WithoutCancel(ctx)); err != nil {
		e.log.Warn(e.lower()+" stopped answering; will connect again", "endpoint", c.Endpoint(), "err", err)
		e.drop(c)
		return false
	}
	return true
}

// drop forgets c, when it is the connection, and closes it; the
// containers started through it are removed on the next connection.
func (e *Lifecycle) drop(c Conn) {
	e.mu.Lock()
	if e.conn == c {
		e.conn = nil
		e.image = ""
		e.orphans = append(e.orphans, c.Label())
	}
	e.mu.Unlock()
	c.Close()
}

// ShortID is the short form of a container ID, for logs and errors.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
