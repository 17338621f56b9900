package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
)

// TestReadWrite sends more than a pipe and a socket hold at once, so writes
// are partial and wait, then ends the stream: the reader sees all of it,
// then io.EOF.
func TestReadWrite(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := socketPair(t)
	for _, tt := range []struct {
		name string
		r    io.ReadCloser
		w    io.WriteCloser
	}{{"pipe", pr, pw}, {"socket", sa, sb}} {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.r.Close()
			r, w := Reader(tt.r), Writer(tt.w)
			want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
			go func() {
				if n, err := w.Write(want); n != len(want) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
				tt.w.Close()
			}()
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("read %d bytes, %v; want %d bytes and EOF", len(got), err, len(want))
			}
		})
	}
}

// TestCloseEndsRead: closing the descriptor unblocks a read waiting on it.
func TestCloseEndsRead(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	r := Reader(pr)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	pr.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %v, want os.ErrClosed", err)
	}
}

func socketPair(t *testing.T) (io.ReadWriteCloser, io.ReadWriteCloser) {
	t.Helper()
	ln, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return b, a
}
