package python

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// Stream is a sandbox's standard input (Write) and output (Read). Close must
// unblock every pending Read and Write: for a container that is closing its
// attach connection, which also frees conmon if it was stuck.
type Stream interface {
	io.Reader
	io.Writer
	io.Closer
}

// Limits bound what one interpreter may make the host hold. The zero value
// means the defaults; see the package documentation for the figures.
type Limits struct {
	MaxRequest     int           // largest request frame; 0 means protocol.DefaultMaxRequestFrame
	MaxAttachment  int           // largest image or file a run may return; see [protocol.Init.MaxAttachment]
	InterruptGrace time.Duration // how long interrupted code has to stop; 0 means DefaultInterruptGrace
}

// Bounds on one run's requests and on the replies waiting to be written. Past
// MaxRequests requests are queued; past MaxQueuedRequests or
// MaxQueuedRequestBytes they are refused with too_many_requests. Replies and
// other frames waiting for the sandbox to read them may take MaxBacklog bytes;
// a sandbox that stops reading past that ends its interpreter.
const (
	MaxRequests           = 64
	MaxQueuedRequests     = 4096
	MaxQueuedRequestBytes = 32 << 20
	MaxBacklog            = 64 << 20
	DefaultInterruptGrace = 2 * time.Second
	// strayLimit caps output that arrives between runs (from threads or
	// processes the code left running); it is shown with the next run.
	strayLimit = 16 << 10
)

// Errors a run returns besides ctx's.
var (
	// ErrNoExit: the sandbox's output ended without an exit frame: the
	// process died (memory limit, os._exit, a crash, or the container went
	// away). The interpreter is dead; the caller knows why from the container.
	ErrNoExit = errors.New("sandbox output ended without an exit frame")
	// ErrProtocol: the sandbox broke the frame protocol. The interpreter is
	// dead; the caller removes the container.
	ErrProtocol = errors.New("sandbox broke the frame protocol")
	// ErrStuck: the code did not stop when interrupted at its time limit. The
	// interpreter is dead; the caller kills the container.
	ErrStuck = errors.New("the code did not stop when interrupted")
	// ErrClosed: the interpreter was closed.
	ErrClosed = errors.New("interpreter closed")
	// ErrBusy: Run was called while another run of the interpreter was in
	// progress; callers serialize runs.
	ErrBusy = errors.New("another run is in progress in this interpreter")
)

// Interpreter is one long-lived Python interpreter in a sandbox, spoken to over
// its [Stream]. Runs share its global namespace, one at a time. It owns two
// goroutines: a reader that always reads the sandbox's output (so the sandbox,
// and conmon in front of it, never block writing), and a writer that sends
// frames in order. Close, or the stream failing, stops both.
type Interpreter struct {
	s      Stream
	limits Limits
	maxReq int
	grace  time.Duration

	out  *writer
	done chan struct{} // closed when the interpreter is dead
	wg   sync.WaitGroup

	mu    sync.Mutex // protects following
	err   error      // why the interpreter died; set before done is closed
	cur   *runState  // the run in progress, or nil
	runs  int        // runs started
	stray capped     // output between runs
}

// Start sends the start frame over s and returns the interpreter. It does not
// wait for the sandbox: a failure shows in the first [Interpreter.Run].
func Start(s Stream, st protocol.Init, limits Limits) *Interpreter {
	if st.Files == nil {
		st.Files = sandboxFiles
	}
	it := newInterpreter(s, limits, 0)
	st.MaxRequest = it.maxReq
	st.MaxAttachment = limits.MaxAttachment
	it.send(protocol.KindStart, st)
	return it
}

// Resume returns the interpreter of a sandbox that started earlier, over a
// new stream s to it: one served in a Kubernetes pod ([ServeEnv]), opened
// again after the stream that started it ended (another codebridge replica's,
// perhaps). It sends no start frame; runs is how many runs the sandbox has
// served, so the next run's number follows them.
func Resume(s Stream, runs int, limits Limits) *Interpreter {
	return newInterpreter(s, limits, runs)
}

func newInterpreter(s Stream, limits Limits, runs int) *Interpreter {
	it := &Interpreter{
		s:      s,
		limits: limits,
		maxReq: limits.MaxRequest,
		grace:  limits.InterruptGrace,
		done:   make(chan struct{}),
		stray:  capped{limit: strayLimit},
		runs:   runs,
	}
	if it.maxReq <= 0 {
		it.maxReq = protocol.DefaultMaxRequestFrame
	}
	if it.grace <= 0 {
		it.grace = DefaultInterruptGrace
	}
	it.out = newWriter(s, it.fail)
	it.wg.Add(2)
	go func() { defer it.wg.Done(); it.out.loop(it.done) }()
	go func() { defer it.wg.Done(); it.read() }()
	return it
}

// Done is closed when the interpreter has died or been closed.
func (it *Interpreter) Done() <-chan struct{} { return it.done }

// Err says why the interpreter died, or nil while it lives.
func (it *Interpreter) Err() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.err
}

// Runs is the number of runs started.
func (it *Interpreter) Runs() int {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.runs
}

// Close ends the interpreter: it closes the stream and waits for the
// interpreter's goroutines. Host calls in progress are cancelled first.
func (it *Interpreter) Close() error {
	it.fail(ErrClosed)
	it.wg.Wait()
	return nil
}

// fail kills the interpreter once: it records why, closes the stream (which
// unblocks the reader and the writer) and cancels the run's host calls.
func (it *Interpreter) fail(err error) {
	it.mu.Lock()
	if it.err != nil {
		it.mu.Unlock()
		return
	}
	it.err = err
	r := it.cur
	close(it.done)
	it.mu.Unlock()
	it.s.Close()
	if r != nil {
		r.cancel()
	}
}

func (it *Interpreter) send(kind byte, v any) {
	payload, err := json.Marshal(v)
	if err != nil {
		it.fail(fmt.Errorf("encoding %q frame: %w", kind, err))
		return
	}
	it.sendRaw(kind, payload)
}

func (it *Interpreter) sendRaw(kind byte, payload []byte) {
	frame, err := protocol.Encode(kind, payload)
	if err == nil {
		err = it.out.enqueue(frame)
	}
	if err != nil {
		it.fail(err)
	}
}

// runState is the state of the run in progress.
type runState struct {
	n      int
	host   Host
	ctx    context.Context // ends when the run ends; host calls use it
	cancel context.CancelFunc
	out    capped
	errOut capped
	exit   chan protocol.Exit // the exit frame, once

	inFlight    int                // requests being served
	queue       []protocol.Request // requests waiting for a place
	queuedBytes int
	calls       sync.WaitGroup
}

// Run runs p in the interpreter within timeout and serves its requests
// through h. At the time limit, or when ctx ends, the code is interrupted
// (KeyboardInterrupt); if it stops within the grace period the interpreter
// lives on and the Result says it was interrupted.
//
// The Result is filled as far as the run got. The error is nil when the
// interpreter is still usable afterwards, else one of [ErrNoExit],
// [ErrProtocol], [ErrStuck] (then Result.Error is a timeout), [ErrClosed], or
// ctx's error when the caller cancelled and the code did not stop. A nil h
// answers every request with an error.
func (it *Interpreter) Run(ctx context.Context, p Program, h Host, timeout time.Duration) (*Result, error) {
	began := time.Now()
	limit := p.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &runState{host: h, ctx: rctx, cancel: cancel, out: capped{limit: limit}, errOut: capped{limit: limit}, exit: make(chan protocol.Exit, 1)}

	it.mu.Lock()
	if it.err != nil {
		err := it.err
		it.mu.Unlock()
		cancel()
		return &Result{Error: &protocol.Failure{Kind: protocol.FailExit, Message: "the interpreter has ended: " + err.Error()}}, err
	}
	if it.cur != nil {
		it.mu.Unlock()
		cancel()
		return nil, ErrBusy
	}
	it.runs++
	r.n = it.runs
	it.cur = r
	background := it.stray.take()
	it.mu.Unlock()

	it.send(protocol.KindRun, protocol.RunFrame{Run: r.n, Code: p.Code, Servers: p.Servers, Prelude: p.Prelude, CheckArgs: p.CheckArgs})

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var exit *protocol.Exit
	var runErr error
	cause := ""
	select {
	case x := <-r.exit:
		exit = &x
	case <-it.done:
	case <-timer.C:
		cause = "timeout"
	case <-ctx.Done():
		cause = "cancel"
	}
	if exit == nil && cause != "" {
		// Interrupt, then give the code a moment to stop.
		it.send(protocol.KindInterrupt, protocol.Interrupt{Run: r.n})
		grace := time.NewTimer(it.grace)
		select {
		case x := <-r.exit:
			exit = &x
		case <-it.done:
		case <-grace.C:
			runErr = ErrStuck
			it.fail(ErrStuck)
		}
		grace.Stop()
	}

	it.mu.Lock()
	it.cur = nil
	dead := it.err
	it.mu.Unlock()
	cancel()
	r.calls.Wait()

	res := &Result{ExitCode: 0, Background: background}
	res.Stdout, res.StdoutBytes, res.StdoutTruncated = r.out.result()
	res.Stderr, res.StderrBytes, res.StderrTruncated = r.errOut.result()
	res.Duration = time.Since(began)
	switch {
	case exit != nil:
		res.ExitCode = exit.ExitCode
		res.Error = exit.Error
		res.PreloadMissing = exit.PreloadMissing
		if cause != "" && res.Error != nil && res.Error.Type == "KeyboardInterrupt" {
			res.Error = interrupted(cause, timeout, true)
		}
		return res, nil
	case runErr == ErrStuck:
		res.ExitCode = -1
		res.Error = interrupted(cause, timeout, false)
		if cause == "cancel" {
			return res, ctx.Err()
		}
		return res, ErrStuck
	default:
		res.ExitCode = -1
		if errors.Is(dead, ErrProtocol) {
			what := strings.TrimPrefix(dead.Error(), ErrProtocol.Error()+": ") // every protocol error wraps it first
			res.Error = &protocol.Failure{Kind: protocol.FailProtocol, Message: "the " + ErrProtocol.Error() + ": " + what}
			return res, dead
		}
		if dead == nil {
			dead = ErrNoExit
		}
		if errors.Is(dead, io.EOF) || errors.Is(dead, io.ErrUnexpectedEOF) {
			dead = ErrNoExit
		}
		return res, dead
	}
}

// interrupted is the Failure of a run stopped at its time limit or by the
// client; kept says whether the session's state survived.
func interrupted(cause string, timeout time.Duration, kept bool) *protocol.Failure {
	what := "timed out after " + seconds(timeout)
	if cause == "cancel" {
		what = "cancelled by the client"
	}
	if kept {
		return &protocol.Failure{Kind: protocol.FailTimeout, Type: "KeyboardInterrupt", Message: what + ": the code was interrupted; the session's variables are kept"}
	}
	return &protocol.Failure{Kind: protocol.FailTimeout, Message: what + ": the code did not stop when interrupted, so its sandbox was killed"}
}

// read is the reader goroutine: it reads frames until the stream ends and
// never blocks on anything but the stream.
func (it *Interpreter) read() {
	fr := protocol.NewReader(it.s, it.frameLimit)
	for {
		kind, payload, err := fr.Next()
		if errors.Is(err, protocol.ErrFrameTooLarge) || errors.Is(err, protocol.ErrUnexpectedKind) {
			err = fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		if err != nil {
			it.fail(err)
			return
		}
		switch kind {
		case protocol.KindStdout, protocol.KindStderr:
			it.output(kind, payload)
		case protocol.KindRequest:
			it.request(payload)
		case protocol.KindExit:
			var x protocol.Exit
			if err := json.Unmarshal(payload, &x); err != nil {
				it.fail(fmt.Errorf("%w: malformed exit frame: %v", ErrProtocol, err))
				return
			}
			it.mu.Lock()
			r := it.cur
			it.mu.Unlock()
			if r != nil && x.Run == r.n {
				select {
				case r.exit <- x:
				default: // a second exit frame for one run: ignore it
				}
			}
		}
	}
}

func (it *Interpreter) frameLimit(kind byte) int {
	switch kind {
	case protocol.KindStdout, protocol.KindStderr:
		return protocol.MaxOutputFrame
	case protocol.KindRequest:
		return it.maxReq
	case protocol.KindExit:
		return protocol.MaxExitFrame
	}
	return 0
}

func (it *Interpreter) output(kind byte, p []byte) {
	it.mu.Lock()
	defer it.mu.Unlock()
	switch r := it.cur; {
	case r == nil:
		it.stray.write(p)
	case kind == protocol.KindStdout:
		r.out.write(p)
	default:
		r.errOut.write(p)
	}
}

// request queues or serves one request of the current run. It never blocks:
// past the bounds the request is refused at once.
func (it *Interpreter) request(payload []byte) {
	var req protocol.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		it.fail(fmt.Errorf("%w: malformed request frame: %v", ErrProtocol, err))
		return
	}
	it.mu.Lock()
	r := it.cur
	switch {
	case r == nil:
		it.mu.Unlock()
		it.reply(req.ID, nil, &protocol.Error{Code: protocol.CodeInternal, Message: "no run is in progress: code left running in the background cannot make requests between runs"})
		return
	case r.inFlight < MaxRequests:
		r.inFlight++
		r.calls.Add(1)
		it.mu.Unlock()
		go it.serve(r, req)
		return
	case len(r.queue) >= MaxQueuedRequests || r.queuedBytes+len(req.Params) > MaxQueuedRequestBytes:
		serving, waiting := r.inFlight, len(r.queue) // read under the lock
		it.mu.Unlock()
		it.reply(req.ID, nil, &protocol.Error{Code: protocol.CodeTooManyRequests, Message: fmt.Sprintf(
			"too many requests at once: %d are being served and %d are waiting (limits %d and %d, or %d MiB waiting); await some before sending more",
			serving, waiting, MaxRequests, MaxQueuedRequests, MaxQueuedRequestBytes>>20)})
		return
	default:
		r.queue = append(r.queue, req)
		r.queuedBytes += len(req.Params)
		it.mu.Unlock()
	}
}

// serve answers req and then the queued requests of r, one after another,
// while places are free.
func (it *Interpreter) serve(r *runState, req protocol.Request) {
	defer r.calls.Done()
	for {
		it.answer(r, req)
		it.mu.Lock()
		if len(r.queue) == 0 || r.ctx.Err() != nil {
			r.inFlight--
			it.mu.Unlock()
			return
		}
		req = r.queue[0]
		r.queue = r.queue[1:]
		r.queuedBytes -= len(req.Params)
		it.mu.Unlock()
	}
}

func (it *Interpreter) answer(r *runState, req protocol.Request) {
	if r.ctx.Err() != nil {
		return // the run is over; nobody waits for the reply
	}
	if r.host == nil {
		it.reply(req.ID, nil, &protocol.Error{Code: protocol.CodeInternal, Message: "this run has no host to answer requests"})
		return
	}
	result, err := r.host.Call(r.ctx, req.Method, req.Params)
	if r.ctx.Err() != nil {
		return
	}
	if err != nil {
		it.reply(req.ID, nil, protocol.ErrorOf(err))
		return
	}
	it.reply(req.ID, result, nil)
}

// reply sends the answer to request id; a result too big for a frame becomes
// an error the code can act on.
func (it *Interpreter) reply(id int64, result any, rerr *protocol.Error) {
	rep := protocol.Reply{ID: id, Error: rerr}
	if rerr == nil {
		b, err := json.Marshal(result)
		if err != nil {
			rep.Error = &protocol.Error{Code: protocol.CodeInternal, Message: "encoding the result: " + err.Error()}
		} else {
			rep.Result = b
		}
	}
	payload, err := json.Marshal(rep)
	if err == nil && len(payload) > protocol.MaxFrame {
		err = fmt.Errorf("the result is %d bytes, more than the %d MiB a reply may carry; ask the tool for less (a page, a range, a summary)", len(payload), protocol.MaxFrame>>20)
	}
	if err != nil {
		payload, _ = json.Marshal(protocol.Reply{ID: id, Error: &protocol.Error{Code: protocol.CodeTooLarge, Message: err.Error()}})
	}
	it.sendRaw(protocol.KindReply, payload)
}

// writer sends frames to the sandbox in order from one goroutine, so no
// caller ever blocks on the sandbox's stdin. Frames wait in memory up to
// [MaxBacklog] bytes; a sandbox that stops reading past that is failed.
type writer struct {
	w    io.Writer
	fail func(error)
	wake chan struct{}

	mu      sync.Mutex // protects following
	queue   [][]byte
	backlog int
}

func newWriter(w io.Writer, fail func(error)) *writer {
	return &writer{w: w, fail: fail, wake: make(chan struct{}, 1)}
}

func (w *writer) enqueue(frame []byte) error {
	w.mu.Lock()
	if w.backlog+len(frame) > MaxBacklog {
		n := w.backlog
		w.mu.Unlock()
		return fmt.Errorf("%w: the sandbox stopped reading from codebridge (%d bytes waiting, limit %d MiB)", ErrProtocol, n, MaxBacklog>>20)
	}
	w.queue = append(w.queue, frame)
	w.backlog += len(frame)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

func (w *writer) loop(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-w.wake:
		}
		for {
			w.mu.Lock()
			if len(w.queue) == 0 {
				w.mu.Unlock()
				break
			}
			frame := w.queue[0]
			w.queue[0] = nil
			w.queue = w.queue[1:]
			w.mu.Unlock()
			_, err := w.w.Write(frame)
			w.mu.Lock()
			w.backlog -= len(frame)
			w.mu.Unlock()
			if err != nil {
				w.fail(fmt.Errorf("writing to the sandbox: %w", err))
				return
			}
		}
	}
}
