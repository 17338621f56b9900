// Package rawio reads and writes sockets and pipes in non-blocking mode
// with raw system calls, waiting for them through Go's network poller as
// the standard library does, but without the runtime's bookkeeping for a
// system call that might block.
//
// That bookkeeping is what costs: a goroutine entering a system call while
// every processor of the program was idle wakes the runtime's monitor
// thread (sysmon), which then polls every 20 µs until the program is idle
// again. A process that waits between short bursts of work, as codebridge
// does on every tool call (the sandbox's request, the server's answer),
// wakes it on every burst: on this project's 2-core build machine sysmon
// took a fifth of codebridge's CPU and half of its threads' sleeps and
// wake-ups per tool call. A read or write on a descriptor in non-blocking
// mode cannot block, so the bookkeeping buys nothing there.
package rawio

import (
	"io"
	"os"
)

// Wrap returns rw reading and writing through raw system calls when it is
// a socket or pipe in non-blocking mode ([syscall.Conn] on a descriptor
// with O_NONBLOCK, as net.Conn and the pipes of os.Pipe and os/exec are),
// else rw itself. The result has rw's Close if rw has one. The descriptor
// must stay in non-blocking mode: an [os.File.Fd] call afterwards (which
// puts it in blocking mode) would make a raw read that waits hold its
// thread and its processor.
func Wrap(rw io.ReadWriter) io.ReadWriter {
	if c := wrap(rw); c != nil {
		return c
	}
	return rw
}

// Reader is [Wrap] for a reader alone.
func Reader(r io.Reader) io.Reader {
	if c := wrap(r); c != nil {
		return c
	}
	return r
}

// Writer is [Wrap] for a writer alone.
func Writer(w io.Writer) io.Writer {
	if c := wrap(w); c != nil {
		return c
	}
	return w
}

// Pollable returns a file for f's descriptor that Wrap reads and writes with
// raw system calls: for a pipe or socket, as a process's stdin and stdout
// from its parent are, a duplicate of the descriptor, put in non-blocking
// mode and so watched by Go's network poller; for anything else (a
// terminal, a regular file), f itself. A read of f alone, in blocking mode,
// holds a thread in the system call and wakes sysmon when the data comes
// (see the package comment), on every message that arrives after a pause.
//
// The mode belongs to the open file description, which the process that
// passed f shares (and, under `go run`, the go command): restore puts back
// blocking mode if Pollable changed it, and must run before the process
// exits. The caller closes the returned file when it is not f; that
// unblocks a read in progress, which closing f itself would not.
func Pollable(f *os.File) (file *os.File, restore func()) {
	if p := pollable(f); p != nil {
		return p.file, p.restore
	}
	return f, func() {}
}

// pollableFile is what pollable (per platform) made of a file; nil from
// pollable means the file as it is.
type pollableFile struct {
	file    *os.File
	restore func()
}
