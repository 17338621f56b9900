package confine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"
)

// Attached is a sandbox container's streams as a driver holds them: the
// engine's attach connection, demultiplexed ([Demux]: stdout through a pipe,
// with back-pressure, stderr kept in a [CapBuffer]), and, when the
// container got a socket, its [Channel], which becomes the stream once the
// container has connected. Read [Attached.Stdout] and write
// [Attached.Stdin] from one goroutine each; the other methods are safe for
// concurrent use once [Attached.Attach] has returned.
type Attached struct {
	ch     *Channel // nil: the stream is stdin and stdout
	stderr *CapBuffer
	done   chan struct{} // closed when the attach stream has ended

	conn   net.Conn       // the hijacked attach connection; nil before Attach
	stdout *io.PipeReader // demultiplexed stdout, fed by pump
	stdin  *stdinWriter
	ready  <-chan struct{} // closed once the stream is known
}

// StdinWriter is a container's standard input. CloseWrite closes it (the
// process reads EOF) while output can still be read.
type StdinWriter interface {
	io.Writer
	CloseWrite() error
}

// stderrCap bounds the stderr kept for diagnostics; the sandbox protocol
// carries the program's own stderr on stdout.
const stderrCap = 64 << 10

// NewAttached returns the streams of a container created with ch as its
// socket (nil for none), before its attach connection exists.
func NewAttached(ch *Channel) *Attached {
	return &Attached{ch: ch, stderr: &CapBuffer{Max: stderrCap}, done: make(chan struct{}), ready: closed}
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Attach takes the container's attach connection, upgraded to its
// multiplexed stream (r reads it, buffered), and demultiplexes it until it
// ends. what names the container and the engine in errors, e.g.
// "container 0123abcd: podman attach".
func (a *Attached) Attach(conn net.Conn, r io.Reader, what string) {
	pr, pw := io.Pipe()
	a.conn, a.stdout = conn, pr
	a.stdin = &stdinWriter{conn: conn}
	go a.pump(r, pw, what)
}

// pump demultiplexes the attach stream.
func (a *Attached) pump(r io.Reader, stdout *io.PipeWriter, what string) {
	defer close(a.done)
	err := Demux(r, stdout, a.stderr)
	var engine *EngineError
	switch {
	case err == nil:
		stdout.Close()
	case errors.As(err, &engine):
		stdout.CloseWithError(fmt.Errorf("%s: %s", what, engine.Msg))
	default:
		stdout.CloseWithError(fmt.Errorf("%s: %w", what, err))
	}
}

type stdinWriter struct {
	conn net.Conn
}

func (w *stdinWriter) Write(p []byte) (int, error) { return w.conn.Write(p) }

func (w *stdinWriter) CloseWrite() error {
	if cw, ok := w.conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("attach connection cannot half-close")
}

// Negotiate has the container, once started, take its stream in the
// background ([Channel.Negotiate]; [Attached.Ready] is closed then);
// declined is told why a container could not connect to its socket. Call
// it once, before the container is handed out, when it has a socket.
func (a *Attached) Negotiate(declined func(reason string), log *slog.Logger) {
	a.ready = a.ch.Ready()
	go a.ch.Negotiate(Stdio{Stdout: a.stdout, Stdin: a.stdin, Stderr: a.stderr}, declined, log)
}

// Ready is closed once the container has taken its stream.
func (a *Attached) Ready() <-chan struct{} { return a.ready }

// Socket reports whether the stream is the container's socket; call it
// after [Attached.Ready].
func (a *Attached) Socket() bool { return a.ch != nil && a.ch.Socket() }

// Stdin is the container's standard input.
func (a *Attached) Stdin() StdinWriter { return a.stdin }

// Stdout is the container's standard output, streamed as it is produced.
// It returns io.EOF when the container's output ends.
func (a *Attached) Stdout() io.Reader { return a.stdout }

// Stderr returns the container's standard error so far (at most 64 KiB, for
// diagnostics). It is collected while Stdout is read.
func (a *Attached) Stderr() string { return a.stderr.String() }

// Done is closed when the attach stream has ended, normally because the
// container exited (or was killed).
func (a *Attached) Done() <-chan struct{} { return a.done }

// Stream is the container's stream: its socket, or stdout and stdin. It
// waits until the container has taken it.
func (a *Attached) Stream() (io.Reader, io.Writer) {
	if a.ch == nil {
		return a.stdout, a.stdin
	}
	<-a.ch.Ready()
	return a.ch.Stream()
}

// Conn is the container's stream ([Attached.Stream]) as one
// ReadWriteCloser: reads and writes wait until the container has taken its
// stream, and Close ends it ([Attached.EndStream]).
func (a *Attached) Conn() io.ReadWriteCloser { return conn{a} }

type conn struct{ a *Attached }

func (c conn) Read(p []byte) (int, error) {
	r, _ := c.a.Stream()
	return r.Read(p)
}

func (c conn) Write(p []byte) (int, error) {
	_, w := c.a.Stream()
	return w.Write(p)
}

func (c conn) Close() error {
	c.a.EndStream()
	return nil
}

// EndStream ends the container's protocol stream: it shuts its socket
// down ([Channel.ShutDown]: the process exits at once), or closes the
// attach stream's stdin (the process reads the end of its input), and
// unblocks every read and write on it. The attach connection stays open, so
// its end ([Attached.Done]) still tells when the process has exited; the
// pump drains the output until then. Ending again does nothing.
func (a *Attached) EndStream() {
	if a.ch != nil {
		a.ch.ShutDown()
	}
	if a.conn == nil {
		return
	}
	a.stdout.Close()
	a.conn.SetWriteDeadline(time.Unix(1, 0)) // unblocks a write the engine does not take
	a.stdin.CloseWrite()
}

// End ends the container's stream, so that its process exits, and waits
// until it has (its output ended), d passes, ctx ends or stop is closed. It
// reports whether the process exited.
func (a *Attached) End(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	a.EndStream()
	if a.conn == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.done:
		return true
	case <-stop:
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// CloseStreams ends the stream and closes the attach connection too. The
// container's process exits when its stream ends: a socket closed, not shut
// down, tells it that codebridge ends, so it exits at its exit turn, if
// the driver gave it one. Closing again does nothing.
func (a *Attached) CloseStreams() {
	if a.ch != nil {
		a.ch.Close() // first: the process must not see a shutdown
	}
	a.EndStream()
	if a.conn != nil {
		a.conn.Close()
	}
}
