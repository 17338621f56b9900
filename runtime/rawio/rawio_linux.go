package rawio

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// conn is a descriptor in non-blocking mode, read and written with raw
// system calls.
type conn struct {
	rc     syscall.RawConn
	closer io.Closer // the wrapped value's Close, or nil
}

func wrap(x any) *conn {
	sc, ok := x.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	if err := rc.Control(func(fd uintptr) {
		flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblocking = errno == 0 && flags&syscall.O_NONBLOCK != 0
	}); err != nil || !nonblocking {
		return nil // a blocking read would hold the goroutine's processor
	}
	c := &conn{rc: rc}
	c.closer, _ = x.(io.Closer)
	return c
}

func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until it is readable
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, closedFile(err)
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *conn) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until it is writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, closedFile(err)
	case errno != 0:
		return n, os.NewSyscallError("write", errno)
	}
	return n, nil
}

// closedFile returns os.ErrClosed for the error of a file closed under a
// read or write, as os.File's own methods do; the raw form of that error
// (internal/poll's ErrFileClosing) is not exported.
func closedFile(err error) error {
	if err.Error() == "use of closed file" {
		return os.ErrClosed
	}
	return err
}

func (c *conn) Close() error {
	if c.closer == nil {
		return nil
	}
	return c.closer.Close()
}

// pollable is Pollable's work on Linux; nil means f as it is.
func pollable(f *os.File) *pollableFile {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var p *pollableFile
	rc.Control(func(fd uintptr) { // Control, not Fd: Fd would set blocking mode
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) != nil {
			return
		}
		if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
			return
		}
		flags, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		if errno != 0 {
			return
		}
		// Already in non-blocking mode, f may still be one the poller does
		// not watch: os.Stdout, made at start, when stdin and stdout are one
		// socket that a Pollable(os.Stdin) has just switched. A duplicate
		// made now is watched either way.
		dup, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			return
		}
		if syscall.SetNonblock(int(dup), true) != nil {
			syscall.Close(int(dup))
			return
		}
		restore := func() {}
		if flags&syscall.O_NONBLOCK == 0 {
			orig := int(fd)
			restore = func() { syscall.SetNonblock(orig, false) }
		}
		p = &pollableFile{
			file:    os.NewFile(dup, f.Name()), // in non-blocking mode: the poller's
			restore: restore,
		}
	})
	return p
}
