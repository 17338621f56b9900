package manifest

import (
	"os"
	"syscall"
	"unsafe"
)

// A dirWatch tells whether anything in a folder may have changed since it
// was last asked, without a system call that blocks: it reads an inotify
// watch of the folder in non-blocking mode. The kernel queues an event
// before the system call that caused it (a rename, a write) returns, so a
// change another process made before this one asks is seen. It replaces a
// stat of a pin file on every tool call, the one system call of a call that
// still woke the Go runtime's monitor thread (see runtime/rawio).
type dirWatch struct {
	f   *os.File // the inotify descriptor; closed by the GC with the Store
	buf []byte
}

const watchEvents = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE |
	syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF

// watchDir returns a watch of dir, or nil where there can be none (dir
// missing, no inotify) or where it could miss a change: on a file system
// other machines write too (NFS, CephFS, SMB, FUSE: replicas on a shared
// state folder), whose changes from elsewhere inotify does not see.
func watchDir(dir string) *dirWatch {
	if !localFS(dir) {
		return nil
	}
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, watchEvents); err != nil {
		syscall.Close(fd)
		return nil
	}
	return &dirWatch{f: os.NewFile(uintptr(fd), "inotify "+dir), buf: make([]byte, 4096)}
}

// changed drains the events queued so far and reports whether there were
// any (an overflowed queue is a change too); alive is false once the watch
// can tell nothing more (the folder was removed or moved, a read failed):
// the caller drops it.
func (w *dirWatch) changed() (changed, alive bool) {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return true, false
	}
	alive = true
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&w.buf[0])), uintptr(len(w.buf)))
			switch {
			case errno == syscall.EINTR:
				continue
			case errno == syscall.EAGAIN:
				return
			case errno != 0 || n == 0:
				changed, alive = true, false
				return
			}
			changed = true
			for off := 0; off+syscall.SizeofInotifyEvent <= int(n); {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
				if ev.Mask&(syscall.IN_IGNORED|syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF) != 0 {
					alive = false
				}
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	})
	if cerr != nil {
		return true, false
	}
	if !alive {
		w.f.Close()
	}
	return changed, alive
}

// localFS reports whether dir is on a file system only this machine's
// kernel writes, whose every change inotify reports (statfs(2)'s magic
// numbers).
func localFS(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case 0xEF53, // ext2, ext3, ext4
		0x58465342, // xfs
		0x9123683E, // btrfs
		0x01021994, // tmpfs
		0x794C7630, // overlayfs
		0xF2F52010, // f2fs
		0x2FC12FC1: // zfs
		return true
	}
	return false
}
