//go:build unix

package confine

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// OwnDir makes dir if needed (0700) and checks that it is a folder owned by
// this user that neither its group nor others may write to: another local
// user must not be able to plant a socket, a lock or a record in it (the
// Podman service socket codebridge joins lives there). A symbolic link to
// such a folder is accepted; the error says the command that fixes it.
func OwnDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	return checkOwned(dir, info)
}

// checkOwned refuses what info describes (path's) unless this user owns it
// and its group and others may not write to it.
func checkOwned(path string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot tell its owner", path)
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): another user could take over what codebridge keeps there; use a folder of your own, or run 'chown %d %s' as root if it is yours", path, st.Uid, uid, uid, path)
	}
	if perm := info.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s may be written by its group or others (mode %v): another user could plant files there; run 'chmod go-w %s'", path, perm, path)
	}
	return nil
}

// FileOwner is the uid that owns what info describes; ok is false where
// that cannot be told.
func FileOwner(info fs.FileInfo) (uid int, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
