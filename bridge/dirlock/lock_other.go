//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package dirlock

import (
	"os"
	"sync"
)

// On other systems writers are serialised within this process only; across
// processes the atomic renames still keep every entry whole.
var processLock sync.Mutex

func tryLockFile(*os.File) (bool, error) { return processLock.TryLock(), nil }

func unlockFile(*os.File) { processLock.Unlock() }
