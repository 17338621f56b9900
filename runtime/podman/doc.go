// Package podman runs sandbox containers through Podman's libpod REST API.
//
// It speaks to Podman with the root package of
// github.com/containers/podman/v5/pkg/bindings only (connection set-up and
// version negotiation), and sends the few libpod requests it needs itself, so the
// binary builds with no build tags and no cgo. Every container it creates is
// hardened the same way: read-only root, no network, no capabilities,
// no-new-privileges, an unprivileged user, memory, pids and rlimit caps, and
// size-limited noexec tmpfs mounts. Where Podman runs on this host, a
// container may also get a read-only mount of an empty folder that held the
// socket of its stream ([Spec.Channel]).
//
// [Connect] finds a Podman API or starts a private 'podman system service';
// [Client.Start] creates, attaches to and starts a container; [Sandbox] is
// the bridge.Runner built on them, with a pool of warm containers.
//
// # Leftovers
//
// Containers carry [LabelManaged] and [LabelOwner] (hostname/pid). If
// codebridge dies without [Sandbox.Close]: a private service dies with it
// (SIGTERM as parent-death signal, Linux); the warm containers see their
// stream end and exit, and in any case give up after the bootstrap's wait
// limit; the exited containers stay until the next codebridge on the host
// calls [Client.RemoveStale] (the Sandbox does on connecting), which removes
// only containers of codebridge processes that no longer run.
package podman
