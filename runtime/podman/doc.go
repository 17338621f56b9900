// Package podman runs sandbox containers through Podman's libpod REST API.
//
// It is one of the engine drivers under runtime/: it translates what every
// engine must do to a sandbox container (runtime/confine: the hardening of
// [confine.Spec.Harden], the seccomp profile, the labels, the unix-socket
// stream) into libpod requests. It speaks to Podman with the root package of
// github.com/containers/podman/v5/pkg/bindings only (connection set-up and
// version negotiation), and sends the few libpod requests it needs itself, so the
// binary builds with no build tags and no cgo. Every container it creates is
// hardened the same way: read-only root, no network, no capabilities,
// no-new-privileges, an unprivileged user, memory, pids and rlimit caps, and
// size-limited noexec tmpfs mounts. Where Podman runs on this host, a
// container may also get a read-only mount of an empty folder that held the
// socket of its stream ([confine.Spec.Channel]). The seccomp profile is a
// file in the state directory there, and elsewhere is put on the Podman host
// through the API.
//
// [Connect] finds a Podman API or uses the 'podman system service' that the
// codebridge processes of a user share, starting it if needed (service.go);
// [Client.Start] creates, attaches to and starts a container; [Engine] is
// the engines' shared life cycle (runtime/enginekit: connecting, the image,
// exit turns, the sweep) on a [Client].
//
// # Leftovers
//
// Nothing is left behind, whatever ends codebridge. Every container is
// created with Podman's auto-remove (conmon runs 'podman container cleanup
// --rm' when it exits, whether or not codebridge or its Podman service still
// runs), and the sandbox's process exits when its stream ends: the warm
// bootstrap waiting for its first session, and the runner even in the middle
// of a run. Codebridge's end closes every stream, so its containers end and
// are removed within moments, also after SIGKILL, an OOM kill or a crash (the
// kernel closes the streams then). Each exit costs Podman 4.3 a process
// (conmon's exit command, 'podman container cleanup', runs with or without
// auto-remove), and hundreds at once overwhelm a machine, so when a
// codebridge's streams all close at once its containers exit in turns
// ([EngineOptions.ExitDelay]); one ended alone exits at once (its socket is
// shut down, not closed). [Engine.Close] therefore sends Podman no
// request and waits for none, and [enginekit.Container.Remove] asks Podman to kill a
// container only when it does not end with its stream (stuck in a call that
// holds the interpreter). A container that has exited may be gone before
// anyone asks, so [APIContainer.Wait] reads its exit code from Podman's events.
//
// A socket's folder is removed as soon as the container has connected. Its
// name starts with the pid of the codebridge that made it, so the next start
// removes the folders of a codebridge killed between starting a container
// and its connection. A shared Podman service exits by itself once no
// codebridge has held a connection to it for 10 s.
//
// The last resort, for what escaped all that (a container whose process
// never reads again): containers carry [confine.LabelManaged] and
// [confine.LabelOwner] (hostname/pid), and the next codebridge on the host
// calls [Client.RemoveStale] in the background on connecting, which removes
// only containers of codebridge processes that no longer run
// ([confine.Owner.Stale]).
package podman
