// Package atomicfile writes files that other processes on the same folder
// (codebridge replicas sharing a state volume) never see half-written.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// WriteNew creates path holding data, unless path exists already; created
// says which. Other processes see no file or the whole of it, never an empty
// or short one: the data goes to a temporary file in the same folder, which
// is then hard-linked to path (link fails if path exists, on local file
// systems and on NFS alike). Where the file system has no hard links, the
// file is created exclusively and then written, as before this function.
func WriteNew(path string, data []byte, perm fs.FileMode) (created bool, err error) {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist):
		return false, nil
	}
	return writeExclusive(path, data, perm)
}

// Replace writes data to path, replacing what is there: other processes
// see the old file or the whole new one, never a short one, and after a
// crash or power loss path holds one or the other. The data goes to a
// temporary file in the same folder, synced, renamed over path, and the
// folder synced.
func Replace(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // a no-op once renamed
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	SyncDir(filepath.Dir(path))
	return nil
}

// writeTemp writes data with perm to a new temporary file beside path,
// synced, and returns its name.
func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".new-*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	err = tmp.Chmod(perm)
	if errors.Is(err, errors.ErrUnsupported) {
		err = nil
	}
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return tmp.Name(), nil
}

// writeExclusive is WriteNew for file systems without hard links.
func writeExclusive(path string, data []byte, perm fs.FileMode) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(path)
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return true, nil
}

// SyncDir makes a rename or removal in dir durable. Best effort: Windows cannot open a
// folder for it, and a failure here leaves a whole file, old or new.
func SyncDir(dir string) {
	if runtime.GOOS == "windows" {
		return
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
