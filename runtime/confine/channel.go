package confine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/rawio"
)

// A container's stream is its attached stdin and stdout, which the engine
// relays through its API service (and Podman through conmon): more processes
// on the path of every message. Where the engine runs on this host, a
// container whose [Spec.Channel] is set gets a unix socket instead
// ([Channel]), made by codebridge in its state directory and bind-mounted
// read-only into the container at [MountDir]; the process there connects to
// it once and the stream is that connection. The socket is removed as soon
// as the connection is made, so nothing else can connect. A process that
// cannot connect (an SELinux policy may forbid it) writes [ChannelDeclined]
// and why on stdout, and the stream stays stdin and stdout. The sockets'
// folder is private to this user ([PrivateDir]); the container sees, in its
// mount table, the host path of its own folder.

// MountDir is where a container sees its socket's folder, which a driver
// bind-mounts there read-only (nosuid, nodev, noexec) from [Channel.Dir].
const MountDir = "/run/codebridge"

// SocketPath is the socket's path in the container: the value of the
// variable [Spec.Channel] names.
const SocketPath = MountDir + "/s"

// ChannelDeclined is the byte a container's process writes on stdout when it
// cannot connect to the socket named by [Spec.Channel], followed by a line
// that says why.
const ChannelDeclined = 0x06

// maxSocketPath bounds a socket's path: sun_path holds 108 bytes on Linux,
// with the terminating NUL.
const maxSocketPath = 107

// ChannelsDir is the folder of the sockets' folders in a state directory.
func ChannelsDir(state string) string { return filepath.Join(state, "channels") }

// SocketsFit reports whether the sockets made in the folders of dir, a
// [ChannelsDir], have paths short enough for a unix socket.
func SocketsFit(dir string) bool {
	// A socket's path is dir/<pid, up to 7 digits>-<random, up to 10 digits>/s.
	return len(dir)+len("/4194304-0123456789/s") <= maxSocketPath
}

// Channel is the host side of one container's socket.
type Channel struct {
	dir string // holds the socket; removed once the stream is known
	ln  *net.UnixListener

	ready chan struct{} // closed once the stream is known
	r     io.Reader     // the stream, set before ready is closed
	w     io.Writer

	mu    sync.Mutex // protects following
	conn  net.Conn   // the accepted connection; nil: stdin and stdout
	state chanState
}

// chanState is how far a [Channel] has been ended.
type chanState int

const (
	chanOpen   chanState = iota
	chanShut             // ended by [Channel.ShutDown]: the connection stays open
	chanClosed           // ended by [Channel.Close]
)

// NewChannel makes a folder in parent, which [PrivateDir] checked, with a
// listening socket the container's user can connect to. The driver mounts
// [Channel.Dir] at [MountDir], sets the variable [Spec.Channel] names to
// [SocketPath], and calls [Channel.Negotiate] once the container started.
func NewChannel(parent string) (*Channel, error) {
	if err := os.MkdirAll(parent, 0o700); err != nil { // a cleaner may have removed it
		return nil, fmt.Errorf("making the sandbox's socket folder: %w", err)
	}
	dir, err := os.MkdirTemp(parent, strconv.Itoa(os.Getpid())+"-") // see SweepChannels
	if err != nil {
		return nil, fmt.Errorf("making the sandbox's socket folder: %w", err)
	}
	path := filepath.Join(dir, "s")
	ch := &Channel{dir: dir, ready: make(chan struct{})}
	// The container's user is not this one: it must reach and connect to
	// the socket. The parent folder keeps others on this host out.
	if err = os.Chmod(dir, 0o755); err == nil {
		ch.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	}
	if err == nil {
		err = os.Chmod(path, 0o666)
	}
	if err != nil {
		ch.Close()
		return nil, fmt.Errorf("making the sandbox's socket: %w", err)
	}
	return ch, nil
}

// Dir is the folder that holds the socket, to mount at [MountDir].
func (ch *Channel) Dir() string { return ch.dir }

// Ready is closed once the stream is known: [Channel.Stream] may be called.
func (ch *Channel) Ready() <-chan struct{} { return ch.ready }

// Stream is the container's stream, for reading and writing: the socket's
// connection, or stdout and stdin. Call it after [Channel.Ready].
func (ch *Channel) Stream() (io.Reader, io.Writer) { return ch.r, ch.w }

// Stdio is a started container's attached standard streams.
type Stdio struct {
	Stdout io.Reader
	Stdin  io.Writer
	Stderr io.Writer // what the process writes outside the protocol
}

// Negotiate waits until the container's process has connected to the
// socket or written on stdout (or stdout ended), sets the stream
// accordingly and closes ready. In the first case, stdout only carries what
// the process writes outside the protocol, kept with stderr. A process that
// cannot connect writes [ChannelDeclined] and a line saying why, which
// declined is told. log receives a failure to accept and the outcome.
func (ch *Channel) Negotiate(std Stdio, declined func(reason string), log *slog.Logger) {
	type acceptance struct {
		conn net.Conn
		err  error
	}
	accepted := make(chan acceptance, 1)
	go func() {
		conn, err := ch.ln.Accept()
		accepted <- acceptance{conn, err}
	}()
	first := make(chan []byte, 1)
	go func() {
		b := readFirst(std.Stdout)
		first <- b
		<-ch.ready
		if ch.Socket() {
			std.Stderr.Write(b)
			io.Copy(std.Stderr, std.Stdout)
		}
	}()

	select {
	case a := <-accepted:
		switch {
		case a.err == nil:
			ch.mu.Lock()
			ch.conn = a.conn
			switch ch.state { // the stream was ended while the container connected
			case chanShut:
				shutConn(a.conn)
			case chanClosed:
				a.conn.Close()
			}
			ch.mu.Unlock()
			rw := rawio.Wrap(a.conn) // raw system calls: see package rawio
			ch.r, ch.w = rw, rw
		case errors.Is(a.err, net.ErrClosed): // the stream was closed, and stdout with it
			ch.r, ch.w = std.Stdout, std.Stdin
		default: // out of file descriptors: the process waits on its connection
			err := fmt.Errorf("accepting the sandbox's connection: %w", a.err)
			log.Warn("the sandbox's stream failed", "err", err)
			ch.r, ch.w = failedStream{err}, failedStream{err}
		}
	case b := <-first:
		if len(b) > 0 && b[0] == ChannelDeclined {
			reason := strings.TrimSpace(string(b[1:]))
			std.Stderr.Write(b[1:])
			declined(reason)
			b = nil
		}
		ch.r, ch.w = io.MultiReader(bytes.NewReader(b), std.Stdout), std.Stdin
		ch.ln.Close()
		if a := <-accepted; a.conn != nil { // connected just as stdout ended
			a.conn.Close()
		}
	}
	ch.ln.Close()
	os.RemoveAll(ch.dir)
	close(ch.ready)
	log.Debug("sandbox stream", "socket", ch.Socket())
}

// maxDeclined bounds the line after [ChannelDeclined].
const maxDeclined = 1024

// readFirst reads the first byte of r and, when it is [ChannelDeclined], the
// line after it. It returns what it read: nothing when r ended first.
func readFirst(r io.Reader) []byte {
	b := make([]byte, 1, maxDeclined)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil
	}
	if b[0] != ChannelDeclined {
		return b
	}
	c := make([]byte, 1)
	for len(b) < maxDeclined && b[len(b)-1] != '\n' {
		if _, err := io.ReadFull(r, c); err != nil {
			break
		}
		b = append(b, c[0])
	}
	return b
}

// failedStream is a stream that could not be set up.
type failedStream struct{ err error }

func (f failedStream) Read([]byte) (int, error)  { return 0, f.err }
func (f failedStream) Write([]byte) (int, error) { return 0, f.err }

// Socket reports whether the stream is the socket; call it after
// [Channel.Ready].
func (ch *Channel) Socket() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.conn != nil
}

// Close closes the listener and the connection, and removes the folder,
// which ends the stream when it is the socket. It may be called more than
// once. The container's process sees the connection closed, as when
// codebridge dies, and exits after its turn ([ExitDelay]).
func (ch *Channel) Close() {
	ch.end(chanClosed)
}

// ShutDown ends the stream as Close does, but only shuts the connection
// down: the container's process reads the end of its input and sees the
// connection still open, which tells it that codebridge ends this sandbox
// alone and waits for it, so it exits at once. Reads and writes on the
// connection are unblocked. Close closes it later.
func (ch *Channel) ShutDown() {
	ch.end(chanShut)
}

// end moves ch on to state to (never back).
func (ch *Channel) end(to chanState) {
	ch.mu.Lock()
	if ch.state >= to {
		ch.mu.Unlock()
		return
	}
	ch.state = to
	conn := ch.conn
	ch.mu.Unlock()
	if conn != nil {
		if to == chanShut {
			shutConn(conn)
		} else {
			conn.Close()
		}
	}
	if ch.ln != nil {
		ch.ln.Close()
	}
	os.RemoveAll(ch.dir)
}

// shutConn shuts conn down for writing and unblocks every read and write on
// it, leaving it open.
func shutConn(conn net.Conn) {
	conn.SetDeadline(time.Unix(1, 0))
	if uc, ok := conn.(*net.UnixConn); ok {
		uc.CloseWrite()
	}
}

// SweepChannels removes the socket folders in dir of codebridge processes
// that no longer run, and any older than an hour (a pid may be reused):
// what a codebridge killed between starting a container and its connection
// left. A folder is named for the pid of the process that made it; a live
// one's folder lives for the moments of a container's start.
func SweepChannels(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, e := range entries {
		info, ierr := e.Info()
		if ierr != nil {
			continue // gone meanwhile
		}
		owner, _, _ := strings.Cut(e.Name(), "-")
		pid, perr := strconv.Atoi(owner)
		dead := perr != nil || pid <= 0 || pid != os.Getpid() && !ProcessAlive(pid)
		if dead || time.Since(info.ModTime()) > time.Hour {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(append(errs, err)...)
}
