package podman

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python"
)

// SandboxOptions configure a [Sandbox]. Zero values mean the defaults.
type SandboxOptions struct {
	URI      string // Podman API; see [Options.URI]
	StateDir string // see [Options.StateDir]
	Image    string // MCP_BRIDGE_IMAGE; "" lets [Client.EnsureImage] choose
	Memory   int64  // bytes per container ([ParseSize] parses "512m"); 0 means [DefaultMemory]
	CPUs     float64
	Pids     int64  // 0 means [DefaultPids]
	User     string // "" means [DefaultUser]
	// WarmContainers is how many started containers wait for code, so a run
	// does not pay for a container start. 0 means 1; negative means none.
	WarmContainers int
	Logger         *slog.Logger // nil discards
}

// Sandbox runs Python programs in single-use Podman containers. It implements
// bridge.Runner. It connects to Podman on first use (or in [Sandbox.Warm]) and
// tries again on later runs while Podman is unavailable, so Podman may be
// installed or started after codebridge.
//
// Every run gets a fresh container, which is removed afterwards; a few are
// started ahead of time (the warm pool) and wait on stdin for their program.
type Sandbox struct {
	opts      SandboxOptions
	log       *slog.Logger
	warm      int           // target size of the warm pool
	waitLimit time.Duration // how long a warm container waits for a program

	connectMu sync.Mutex // serializes connecting; held while connecting

	mu      sync.Mutex // protects following
	client  *Client
	image   string                  // resolved image, "" until resolved
	pool    []*Container            // warm containers, oldest first
	filling int                     // warm containers being started
	live    map[*Container]struct{} // every container we have not removed
	orphans []string                // client labels of dropped connections whose containers may remain
	closed  bool

	bg sync.WaitGroup // refills, watchers and removals in the background
}

// waitLimit bounds how long a warm container's bootstrap waits for its
// program. If codebridge dies hard, its containers then exit on their own;
// while it lives, the pool replaces the ones that expire.
const waitLimit = 30 * time.Minute

// NewSandbox returns a sandbox; it does not touch Podman until used.
func NewSandbox(opts SandboxOptions) *Sandbox {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	warm := opts.WarmContainers
	switch {
	case warm == 0:
		warm = 1
	case warm < 0:
		warm = 0
	}
	return &Sandbox{opts: opts, log: log, warm: warm, waitLimit: waitLimit, live: map[*Container]struct{}{}}
}

// Warm connects to Podman, removes what dead codebridge processes left behind,
// resolves the image and fills the warm pool. Servers call it at start-up and
// only log its error: runs try again.
func (s *Sandbox) Warm(ctx context.Context) error {
	c, img, err := s.ready(ctx)
	if err != nil {
		s.log.Warn("sandbox not ready", "err", err)
		return err
	}
	var wg sync.WaitGroup
	for range s.reserve() {
		wg.Go(func() { s.fill(ctx, c, img) })
	}
	wg.Wait()
	return nil
}

// Run runs p in a fresh container with a time limit. Failures of the code or
// of the sandbox are described by the Result's Error; the error is non-nil
// only when ctx ended first.
func (s *Sandbox) Run(ctx context.Context, p python.Program, h python.Host, timeout time.Duration) (*python.Result, error) {
	c, img, err := s.ready(ctx)
	if err != nil {
		return failed(python.FailUnavailable, err.Error()), ctx.Err()
	}
	ct, err := s.take(ctx, c, img)
	if err != nil {
		if ctx.Err() != nil {
			return failed(python.FailUnavailable, err.Error()), ctx.Err()
		}
		s.checkAlive(ctx, c)
		return failed(python.FailUnavailable, "cannot start a sandbox container: "+err.Error()), nil
	}
	defer func() {
		// Refill only now: starting a container while this run executes
		// would slow it down (measured: ~10 ms runs became 60-100 ms on two
		// cores), and agents' calls are seconds apart.
		s.discard(ctx, ct)
		s.refill(ctx, c, img)
	}()

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Exec returns when runCtx ends; killing the container also ends every
	// read and write on its streams.
	stop := context.AfterFunc(runCtx, func() {
		kctx, cancel := deadlineCtx(ctx, requestTimeout)
		defer cancel()
		if err := ct.Kill(kctx); err != nil {
			s.log.Warn("killing sandbox container", "container", shortID(ct.ID), "err", err)
		}
	})
	defer stop()
	res, err := python.Exec(runCtx, ct.Stdin(), ct.Stdout(), p, h)
	if res == nil {
		res = &python.Result{}
	}
	// A result that arrived is kept even if a deadline passes just after;
	// Exec's error tells whether the run was cut short.
	cut := err != nil && !errors.Is(err, python.ErrProtocol)
	switch {
	case cut && ctx.Err() != nil:
		return res, ctx.Err()
	case cut && errors.Is(runCtx.Err(), context.DeadlineExceeded):
		// Killed at the deadline (Exec may see the kill's end of output first).
		// Kill and remove before answering: a run that timed out leaves nothing.
		rctx, cancel := deadlineCtx(ctx, requestTimeout)
		defer cancel()
		_ = ct.Kill(rctx)
		s.remove(rctx, ct)
		res.Error = &python.Failure{
			Kind:    python.FailTimeout,
			Message: "timed out after " + seconds(timeout),
		}
	case errors.Is(err, python.ErrNoExit):
		s.explainExit(ctx, ct, res)
	case errors.Is(err, python.ErrProtocol):
		// res.Error says what; the container is killed by discard.
	case err != nil:
		s.checkAlive(ctx, c)
		res.Error = &python.Failure{
			Kind:    python.FailUnavailable,
			Message: "lost the connection to the sandbox container: " + err.Error(),
		}
	}
	return res, nil
}

// explainExit fills res.Error for a process that ended without an exit frame.
func (s *Sandbox) explainExit(ctx context.Context, ct *Container, res *python.Result) {
	wctx, cancel := deadlineCtx(ctx, 10*time.Second)
	defer cancel()
	code, err := ct.Wait(wctx)
	if err != nil && !s.checkAlive(ctx, ct.c) {
		res.Error = &python.Failure{Kind: python.FailUnavailable, Message: "lost the connection to Podman during the run (the next run connects again): " + err.Error()}
		return
	}
	if err != nil {
		res.Error = &python.Failure{Kind: python.FailExit, Message: "the sandbox process ended without reporting a result, and its exit status is unknown: " + err.Error()}
		return
	}
	res.ExitCode = code
	if oom, err := ct.OOMKilled(wctx); err == nil && oom {
		res.Error = &python.Failure{
			Kind:    python.FailOOM,
			Message: "killed: the code exceeded the sandbox memory limit of " + mib(cmpOr(s.opts.Memory, DefaultMemory)),
		}
		return
	}
	msg := fmt.Sprintf("the Python process died with exit code %d without reporting a result", code)
	if code > 128 {
		msg = fmt.Sprintf("the Python process was killed by signal %d (exit code %d) without reporting a result", code-128, code)
	}
	if diag := strings.TrimSpace(ct.Stderr()); diag != "" {
		msg += "; stderr: " + tail(diag, 2000)
	}
	res.Error = &python.Failure{Kind: python.FailExit, Message: msg}
}

// Close removes every container of this sandbox and stops a Podman service it
// started. Runs still in progress fail. Close waits for background work;
// closing again does nothing.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.client
	orphans := s.orphans
	cts := make([]*Container, 0, len(s.live))
	for ct := range s.live {
		cts = append(cts, ct)
	}
	s.pool = nil
	s.mu.Unlock()

	var errs []error
	for _, ct := range cts {
		rctx, cancel := deadlineCtx(ctx, requestTimeout)
		if err := ct.Remove(rctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	s.bg.Wait() // refills started before closed was set finish, and are removed
	if c != nil {
		// Anything of ours that escaped the bookkeeping.
		rctx, cancel := deadlineCtx(ctx, requestTimeout)
		if _, err := removeByClient(rctx, c, append(orphans, c.owner[labelClient])...); err != nil {
			errs = append(errs, err)
		}
		cancel()
		c.Close()
	}
	return errors.Join(errs...)
}

// ready returns a connected client and the image, connecting first if needed.
func (s *Sandbox) ready(ctx context.Context) (*Client, string, error) {
	s.mu.Lock()
	c, img, closed := s.client, s.image, s.closed
	s.mu.Unlock()
	if closed {
		return nil, "", errors.New("the sandbox is shut down")
	}
	if c != nil && img != "" && !c.serviceExited() {
		return c, img, nil
	}

	s.connectMu.Lock()
	defer s.connectMu.Unlock()
	s.mu.Lock()
	c, img = s.client, s.image
	s.mu.Unlock()
	if c != nil && c.serviceExited() {
		s.log.Warn("the podman service codebridge started has exited; starting another")
		s.dropClient(c)
		c = nil
	}
	if c == nil {
		var err error
		c, err = Connect(ctx, Options{URI: s.opts.URI, StateDir: s.opts.StateDir, Logger: s.log})
		if err != nil {
			return nil, "", err
		}
		if n, err := c.RemoveStale(ctx); err != nil {
			s.log.Warn("removing containers of dead codebridge processes", "err", err)
		} else if n > 0 {
			s.log.Info("removed containers of dead codebridge processes", "count", n)
		}
		s.mu.Lock()
		orphans := s.orphans
		s.mu.Unlock()
		if len(orphans) > 0 {
			// Containers started through a connection that died keep running
			// under conmon; no one else would remove them.
			if n, err := removeByClient(ctx, c, orphans...); err != nil {
				s.log.Warn("removing containers of the previous podman connection", "err", err)
			} else {
				s.log.Info("removed containers of the previous podman connection", "count", n)
				s.mu.Lock()
				s.orphans = s.orphans[len(orphans):]
				s.mu.Unlock()
			}
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil, "", errors.New("the sandbox is shut down")
		}
		s.client = c
		s.mu.Unlock()
	}
	if img == "" {
		var err error
		img, err = c.EnsureImage(ctx, s.opts.Image)
		if err != nil {
			return nil, "", err
		}
		s.log.Info("sandbox ready", "podman", c.URI(), "image", img)
		s.mu.Lock()
		s.image = img
		s.mu.Unlock()
	}
	return c, img, nil
}

// checkAlive reports whether Podman still answers c, and drops the client
// when it does not, so the next run connects again.
func (s *Sandbox) checkAlive(ctx context.Context, c *Client) bool {
	pctx, cancel := deadlineCtx(ctx, pingTimeout)
	defer cancel()
	if err := c.do(pctx, pingTimeout, "GET", "/_ping", nil, nil, nil); err != nil {
		s.log.Warn("podman stopped answering; will connect again", "uri", c.URI(), "err", err)
		s.dropClient(c)
		return false
	}
	return true
}

func (s *Sandbox) dropClient(c *Client) {
	s.mu.Lock()
	if s.client == c {
		s.client = nil
		s.image = ""
		s.orphans = append(s.orphans, c.owner[labelClient])
		// The pool's containers belong to that connection.
		for _, ct := range s.pool {
			delete(s.live, ct)
		}
		s.pool = nil
	}
	s.mu.Unlock()
	c.Close()
}

// take returns a warm container if one is ready, else starts one.
func (s *Sandbox) take(ctx context.Context, c *Client, img string) (*Container, error) {
	var ct *Container
	s.mu.Lock()
	for len(s.pool) > 0 && ct == nil {
		cand := s.pool[0]
		s.pool = s.pool[1:]
		select {
		case <-cand.Done(): // exited while waiting; its watcher removes it
		default:
			if time.Since(cand.started) < s.waitLimit-time.Minute {
				ct = cand
				break
			}
			// Its bootstrap gives up waiting soon: do not race it.
			s.bg.Go(func() {
				rctx, cancel := deadlineCtx(ctx, requestTimeout)
				defer cancel()
				s.remove(rctx, cand)
			})
		}
	}
	s.mu.Unlock()
	if ct != nil {
		return ct, nil
	}
	return s.start(ctx, c, img)
}

func (s *Sandbox) spec(img string) Spec {
	return Spec{
		Image:   img,
		Command: python.Command(),
		Env:     map[string]string{python.WaitLimitEnv: strconv.Itoa(int(s.waitLimit.Seconds()))},
		User:    s.opts.User,
		Memory:  s.opts.Memory,
		CPUs:    s.opts.CPUs,
		Pids:    s.opts.Pids,
	}
}

// start starts a container and records it as live.
func (s *Sandbox) start(ctx context.Context, c *Client, img string) (*Container, error) {
	ct, err := c.Start(ctx, s.spec(img))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.live[ct] = struct{}{}
	}
	s.mu.Unlock()
	if closed {
		rctx, cancel := deadlineCtx(ctx, requestTimeout)
		defer cancel()
		ct.Remove(rctx)
		return nil, errors.New("the sandbox is shut down")
	}
	return ct, nil
}

// reserve claims the missing places in the warm pool and returns how many.
func (s *Sandbox) reserve() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	n := max(s.warm-len(s.pool)-s.filling, 0)
	s.filling += n
	return n
}

// refill starts the missing warm containers in the background.
func (s *Sandbox) refill(ctx context.Context, c *Client, img string) {
	for range s.reserve() {
		s.bg.Go(func() { s.fill(context.WithoutCancel(ctx), c, img) })
	}
}

// fill starts one warm container for a place reserve claimed.
func (s *Sandbox) fill(ctx context.Context, c *Client, img string) {
	sctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	ct, err := s.start(sctx, c, img)
	s.mu.Lock()
	s.filling--
	ok := err == nil && !s.closed && s.client == c
	if ok {
		s.pool = append(s.pool, ct)
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("starting a warm sandbox container", "err", err)
		return
	}
	if !ok {
		s.remove(ctx, ct)
		return
	}
	s.bg.Go(func() { s.watch(context.WithoutCancel(ctx), c, img, ct) })
}

// watch replaces a warm container that exits before it is used (its
// bootstrap gave up waiting, or something killed it).
func (s *Sandbox) watch(ctx context.Context, c *Client, img string, ct *Container) {
	<-ct.Done()
	s.mu.Lock()
	inPool := false
	for i, p := range s.pool {
		if p == ct {
			s.pool = append(s.pool[:i:i], s.pool[i+1:]...)
			inPool = true
			break
		}
	}
	s.mu.Unlock()
	if !inPool {
		return // taken by a run, which removes it, or the sandbox closed
	}
	s.log.Debug("warm sandbox container exited; replacing it", "container", shortID(ct.ID))
	rctx, cancel := deadlineCtx(ctx, requestTimeout)
	s.remove(rctx, ct)
	cancel()
	s.mu.Lock()
	same := s.client == c
	s.mu.Unlock()
	if same {
		s.refill(ctx, c, img)
	}
}

// discard kills and removes a used container in the background.
func (s *Sandbox) discard(ctx context.Context, ct *Container) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed { // Close is waiting for bg, or done: no new background work
		rctx, cancel := deadlineCtx(ctx, requestTimeout)
		defer cancel()
		s.remove(rctx, ct)
		return
	}
	s.bg.Go(func() {
		rctx, cancel := deadlineCtx(ctx, requestTimeout)
		defer cancel()
		s.remove(rctx, ct)
	})
}

func (s *Sandbox) remove(ctx context.Context, ct *Container) {
	if err := ct.Remove(ctx); err != nil {
		s.log.Warn("removing sandbox container", "container", shortID(ct.ID), "err", err)
	}
	s.mu.Lock()
	delete(s.live, ct)
	s.mu.Unlock()
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

func failed(kind python.FailureKind, msg string) *python.Result {
	return &python.Result{Error: &python.Failure{Kind: kind, Message: msg}}
}

func seconds(d time.Duration) string {
	if d == time.Second {
		return "1 second"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " seconds"
}

func mib(b int64) string {
	if b%(1<<20) == 0 {
		return strconv.FormatInt(b>>20, 10) + " MiB"
	}
	return strconv.FormatInt(b, 10) + " bytes"
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
