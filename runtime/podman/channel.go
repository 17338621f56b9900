package podman

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A container's stream ([Box.Stream]) is its attached stdin and stdout,
// which Podman relays through its API service and conmon: two more processes
// on the path of every message. Where Podman runs on this host, a container
// whose [Spec.Channel] is set gets a unix socket instead, made by codebridge
// in its state directory and bind-mounted read-only into the container; the
// process there connects to it once and the stream is that connection. The
// socket is removed as soon as the connection is made, so nothing else can
// connect. A process that cannot connect (an SELinux policy may forbid it)
// writes [ChannelDeclined] and why on stdout, and the stream stays stdin and
// stdout. The sockets' folder is private to this user ([privateDir]); the
// container sees, in its mount table, the host path of its own folder.

// channelMount is where a container sees its socket's folder.
const channelMount = "/run/codebridge"

// ChannelDeclined is the byte a container's process writes on stdout when it
// cannot connect to the socket named by [Spec.Channel], followed by a line
// that says why.
const ChannelDeclined = 0x06

// maxSocketPath bounds a socket's path: sun_path holds 108 bytes on Linux,
// with the terminating NUL.
const maxSocketPath = 107

// channelsDir is the folder of the sockets' folders in a state directory.
func channelsDir(state string) string { return filepath.Join(state, "channels") }

// channel is the host side of one container's socket.
type channel struct {
	dir string // holds the socket; removed once the stream is known
	ln  *net.UnixListener

	ready chan struct{} // closed once the stream is known

	mu     sync.Mutex // protects following
	conn   net.Conn   // the accepted connection; nil: stdin and stdout
	closed bool
}

// newChannel makes a folder in parent, which [privateDir] checked, with a
// listening socket the container's user can connect to.
func newChannel(parent string) (*channel, error) {
	if err := os.MkdirAll(parent, 0o700); err != nil { // a cleaner may have removed it
		return nil, fmt.Errorf("making the sandbox's socket folder: %w", err)
	}
	dir, err := os.MkdirTemp(parent, strconv.Itoa(os.Getpid())+"-") // see sweepChannels
	if err != nil {
		return nil, fmt.Errorf("making the sandbox's socket folder: %w", err)
	}
	path := filepath.Join(dir, "s")
	ch := &channel{dir: dir, ready: make(chan struct{})}
	// The container's user is not this one: it must reach and connect to
	// the socket. The parent folder keeps others on this host out.
	if err = os.Chmod(dir, 0o755); err == nil {
		ch.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	}
	if err == nil {
		err = os.Chmod(path, 0o666)
	}
	if err != nil {
		ch.close()
		return nil, fmt.Errorf("making the sandbox's socket: %w", err)
	}
	return ch, nil
}

// mount is the bind mount that shows the socket's folder to the container.
func (ch *channel) mount() mount {
	return mount{Destination: channelMount, Type: "bind", Source: ch.dir, Options: []string{"ro", "nosuid", "nodev", "noexec"}}
}

// negotiate waits until the container's process has connected to the
// socket or written on stdout (or stdout ended), sets ct's stream
// accordingly and closes ready. In the first case, stdout only carries what
// the process writes outside the protocol, kept with stderr. A process that
// cannot connect writes [ChannelDeclined] and a line saying why.
func (ct *Container) negotiate() {
	ch := ct.ch
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
		b := readFirst(ct.stdout)
		first <- b
		<-ch.ready
		if ch.socket() {
			ct.stderr.Write(b)
			io.Copy(ct.stderr, ct.stdout)
		}
	}()

	select {
	case a := <-accepted:
		switch {
		case a.err == nil:
			ch.mu.Lock()
			ch.conn = a.conn
			if ch.closed {
				a.conn.Close() // the stream was closed while the container connected
			}
			ch.mu.Unlock()
			ct.r, ct.w = a.conn, a.conn
		case errors.Is(a.err, net.ErrClosed): // the stream was closed, and stdout with it
			ct.r, ct.w = ct.stdout, ct.stdin
		default: // out of file descriptors: the process waits on its connection
			err := fmt.Errorf("accepting the sandbox's connection: %w", a.err)
			ct.c.log.Warn("the sandbox's stream failed", "container", shortID(ct.ID), "err", err)
			ct.r, ct.w = failedStream{err}, failedStream{err}
		}
	case b := <-first:
		if len(b) > 0 && b[0] == ChannelDeclined {
			reason := strings.TrimSpace(string(b[1:]))
			ct.stderr.Write(b[1:])
			ct.c.declined.Do(func() {
				if ct.c.onDeclined != nil {
					ct.c.onDeclined(shortID(ct.ID), reason)
					return
				}
				ct.c.log.Warn("a sandbox could not connect to its socket and talks through Podman's attach stream, which makes tool calls slower",
					"container", shortID(ct.ID), "reason", reason)
			})
			b = nil
		}
		ct.r, ct.w = io.MultiReader(bytes.NewReader(b), ct.stdout), ct.stdin
		ch.ln.Close()
		if a := <-accepted; a.conn != nil { // connected just as stdout ended
			a.conn.Close()
		}
	}
	ch.ln.Close()
	os.RemoveAll(ch.dir)
	close(ch.ready)
	ct.c.log.Debug("sandbox stream", "container", shortID(ct.ID), "socket", ch.socket())
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

// socket reports whether the stream is the socket; call it after ready.
func (ch *channel) socket() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.conn != nil
}

// close closes the listener and the connection, and removes the folder.
// It may be called more than once.
func (ch *channel) close() {
	ch.mu.Lock()
	ch.closed = true
	conn := ch.conn
	ch.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	if ch.ln != nil {
		ch.ln.Close()
	}
	os.RemoveAll(ch.dir)
}

// sweepChannels removes the socket folders in dir of codebridge processes
// that no longer run, and any older than an hour (a pid may be reused):
// what a codebridge killed between starting a container and its connection
// left. A folder is named for the pid of the process that made it; a live
// one's folder lives for the moments of a container's start.
func sweepChannels(dir string) error {
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
		dead := perr != nil || pid <= 0 || pid != os.Getpid() && !processAlive(pid)
		if dead || time.Since(info.ModTime()) > time.Hour {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(append(errs, err)...)
}
