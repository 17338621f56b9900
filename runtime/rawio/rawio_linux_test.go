package rawio

import (
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
