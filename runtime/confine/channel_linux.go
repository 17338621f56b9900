package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// PrivateDir makes dir if needed and checks that it and its parent are real
// folders owned by this user that no one else may write to, so that no
// other user on this host can reach the sockets made in dir; dir itself is
// made 0700.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		info, err := os.Lstat(d)
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		switch {
		case !info.IsDir():
			return fmt.Errorf("%s is not a folder (a symbolic link?)", d)
		case !ok || int(st.Uid) != os.Getuid():
			return fmt.Errorf("%s belongs to another user", d)
		case info.Mode().Perm()&0o022 != 0:
			return fmt.Errorf("%s may be written by others (mode %v)", d, info.Mode().Perm())
		}
	}
	return os.Chmod(dir, 0o700)
}
