// Package podman runs sandbox containers through Podman's libpod REST API.
//
// It speaks to Podman with the root package of
// github.com/containers/podman/v5/pkg/bindings only (connection set-up and
// version negotiation), and sends the few libpod requests it needs itself, so the
// binary builds with no build tags and no cgo. Every container it creates is
// hardened the same way: read-only root, no network, no capabilities,
// no-new-privileges, an unprivileged user, memory, pids and rlimit caps, and
// size-limited noexec tmpfs mounts.
package podman
