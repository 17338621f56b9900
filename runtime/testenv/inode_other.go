//go:build !unix

package testenv

import "os"

func inode(os.FileInfo) (uint64, bool) { return 0, false }
