package rawio

import (
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
