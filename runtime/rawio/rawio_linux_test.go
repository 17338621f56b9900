package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

func TestWrap(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	a, b := net.Pipe() // no descriptors
	defer a.Close()
	defer b.Close()
	// A descriptor in blocking mode, with one owner: a second os.File on
	// pr's descriptor would close it again when collected, after the number
	// went to another test's pipe (TestReadWrite hung on that).
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	blocking := os.NewFile(uintptr(fds[1]), "blocking")
	defer blocking.Close()
	defer os.NewFile(uintptr(fds[0]), "blocking-r").Close()
	for _, tt := range []struct {
		name    string
		x       any
		wrapped bool
	}{
		{"pipe", pw, true},
		{"in-memory pipe", a, false},
		{"blocking descriptor", blocking, false},
	} {
		if _, got := Writer(tt.x.(io.Writer)).(*conn); got != tt.wrapped {
			t.Errorf("%s: wrapped %v, want %v", tt.name, got, tt.wrapped)
		}
	}
}

// TestPollable: a pipe in blocking mode, as a parent passes stdin, comes
// back as a duplicate in non-blocking mode that Wrap reads raw and whose
// Close ends a read in progress; restore puts the pipe back in blocking
// mode. A regular file comes back as it is.
func TestPollable(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil { // blocking, unlike os.Pipe's
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer w.Close()
	p, restore := Pollable(r)
	if p == r {
		t.Fatal("a pipe in blocking mode came back as it is")
	}
	if !nonblocking(t, fds[0]) {
		t.Error("the pipe is in blocking mode after Pollable")
	}
	pr, ok := Reader(p).(*conn)
	if !ok {
		t.Fatal("Wrap does not read Pollable's file raw")
	}
	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if n, err := pr.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := pr.Read(buf)
		done <- err
	}()
	p.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after closing Pollable's file: %v, want os.ErrClosed", err)
	}
	restore()
	if nonblocking(t, fds[0]) {
		t.Error("restore left the pipe in non-blocking mode")
	}
	if q, restore := Pollable(r); q != r { // in blocking mode again, it may be made pollable again
		q.Close()
		restore()
	} else {
		t.Error("the pipe was not made pollable a second time")
	}

	// A pipe already in non-blocking mode also comes back as a duplicate,
	// and restore leaves its mode alone.
	syscall.SetNonblock(fds[0], true)
	q, restore := Pollable(r)
	if q == r {
		t.Error("a pipe in non-blocking mode came back as it is")
	} else {
		q.Close()
	}
	restore()
	if !nonblocking(t, fds[0]) {
		t.Error("restore put a pipe Pollable found in non-blocking mode in blocking mode")
	}

	f, err := os.CreateTemp(t.TempDir(), "regular")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if q, _ := Pollable(f); q != f {
		t.Error("a regular file did not come back as it is")
	}
}

func nonblocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// TestPollableSharedSocket: stdin and stdout one socket, as an agent may
// pass them. os.Stdout is made at start, in blocking mode; Pollable of stdin
// then switches the socket to non-blocking mode under it. Pollable of
// stdout must still give a file the poller watches: writing more than the
// socket holds then waits for the reader instead of failing with EAGAIN.
func TestPollableSharedSocket(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := os.NewFile(uintptr(fds[0]), "stdin")
	defer in.Close()
	out0, err := syscall.Dup(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	out := os.NewFile(uintptr(out0), "stdout") // made while in blocking mode
	defer out.Close()
	peer := os.NewFile(uintptr(fds[1]), "peer")
	defer peer.Close()

	pin, restoreIn := Pollable(in)
	defer restoreIn()
	defer pin.Close()
	pout, restoreOut := Pollable(out)
	defer restoreOut()
	if pout == out {
		t.Fatal("stdout, not watched by the poller, came back as it is")
	}
	defer pout.Close()
	want := bytes.Repeat([]byte("x"), 4<<20) // more than a socket holds
	got := make(chan int, 1)
	go func() {
		n, _ := io.Copy(io.Discard, io.LimitReader(peer, int64(len(want))))
		got <- int(n)
	}()
	if n, err := Writer(pout).Write(want); n != len(want) || err != nil {
		t.Fatalf("Write = %d, %v; want %d bytes written", n, err, len(want))
	}
	if n := <-got; n != len(want) {
		t.Errorf("the peer read %d bytes, want %d", n, len(want))
	}
}
