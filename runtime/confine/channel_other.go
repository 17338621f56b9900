//go:build !linux

package confine

import "errors"

// PrivateDir: sockets shared with containers are used on Linux only.
func PrivateDir(string) error {
	return errors.New("sockets shared with containers are used on Linux only")
}
