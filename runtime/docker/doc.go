// Package docker runs sandbox containers through the Docker Engine API.
//
// It is one of the engine drivers under runtime/, a sibling of
// runtime/podman: it translates what every engine must do to a sandbox
// container (runtime/confine: the hardening of [confine.Spec.Harden], the
// seccomp profile, the labels, the unix-socket stream) into Engine API
// requests. It speaks to the daemon with the standard library's HTTP client
// over the versioned API (the version negotiated with /version, at least
// 1.40, Docker 19.03), so codebridge needs no Docker module: the official
// Go client would add dozens of modules to a cold `go run` (see
// docs/engines.md).
//
// [Connect] finds the daemon as the docker CLI does: DOCKER_HOST (unix://,
// tcp:// with DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, ssh:// through 'ssh
// HOST docker system dial-stdio'), else the current Docker context
// (DOCKER_CONTEXT, else the config's currentContext), else rootless Docker's
// socket, Docker Desktop's, and /var/run/docker.sock. [Client.Start]
// creates, attaches to and starts a container; [Engine] is the engines'
// shared life cycle (runtime/enginekit: connecting, the image resolved or
// pulled once, the sweep of what dead codebridge processes left) on a
// [Client].
//
// Every container gets the same hardening as on Podman: read-only root, no
// network, no capabilities, no-new-privileges, an unprivileged user, memory
// (without swap), pids, CPU and rlimit caps, size-limited noexec tmpfs
// mounts owned by that user, an init, and the sandbox's seccomp profile,
// sent inline in the create request (so it holds wherever the daemon runs).
// Where the daemon shares this host's files (a unix socket on Linux that is
// not Docker Desktop's VM), a container may also get a read-only bind mount
// of the folder of its stream's socket ([confine.Spec.Channel]).
//
// # Leftovers
//
// Every container is created with Docker's AutoRemove, and the sandbox's
// process exits when its stream ends (StdinOnce: the daemon closes the
// container's stdin when the attach stream's stdin ends). Codebridge's end
// closes every stream, so its containers end and are removed within
// moments, also after SIGKILL. Since a container removes itself once it
// exits, its exit code is asked for (a wait request with condition
// "removed") before it starts. The last resort: containers carry
// [confine.LabelManaged] and [confine.LabelOwner], and the next codebridge
// on the host calls [Client.RemoveStale] in the background on connecting.
package docker
