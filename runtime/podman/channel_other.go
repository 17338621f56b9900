//go:build !linux

package podman

import "errors"

// privateDir: sockets shared with containers are used on Linux only.
func privateDir(string) error {
	return errors.New("sockets shared with containers are used on Linux only")
}
