package confine

import (
	"fmt"
	"os"
	"path/filepath"
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
		if !info.IsDir() {
			return fmt.Errorf("%s is not a folder (a symbolic link?)", d)
		}
		if err := checkOwned(d, info); err != nil {
			return err
		}
	}
	return os.Chmod(dir, 0o700)
}
