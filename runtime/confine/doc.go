// Package confine is what every engine must do to a sandbox container,
// whatever the engine: the engine drivers under runtime/ (runtime/podman
// and runtime/docker) translate it into their own requests, so the same
// guarantees hold on each; runtime/enginetest checks that they do.
//
//   - [Spec] describes a sandbox container and [Spec.Harden] gives the
//     hardening every driver applies, field by field ([Hardened]): read-only
//     root, no network, no capabilities, no-new-privileges, an init,
//     user 65534, memory (without swap), pids, CPU and rlimit caps,
//     size-limited noexec tmpfs mounts on /tmp and /work, SIGKILL to stop,
//     and removal by the engine once the container exits.
//   - [SeccompProfile] is the sandbox's seccomp profile, which every driver
//     applies: inline or as a file ([WriteSeccompProfile]) on the engine's
//     host.
//   - [LabelManaged], [LabelOwner] and [LabelOwnerStart] mark a container as
//     codebridge's and name its owner process; [Owner.Stale] is the rule by
//     which a driver's sweep removes only the containers of codebridge
//     processes of this host that no longer run.
//   - [Channel] is a container's unix socket, where the engine shares this
//     host's files: a folder made private to this user ([PrivateDir]),
//     bind-mounted read-only at [MountDir], swept of the folders of dead
//     processes ([SweepChannels]), and the negotiation that makes the socket
//     or stdin and stdout the container's stream.
//   - [GVisor] tells gVisor's runsc among OCI runtimes ([Spec.Runtime]);
//     under it [Spec.Harden] moves the process limit to RLIMIT_NPROC,
//     [SeccompProfile] drops its clone3 rule, [GVisorArgs] are the runsc
//     flags an engine must pass, and [GVisorStartHint] words runsc's
//     failure without them.
//   - [Demux] reads the multiplexed attach stream (8-byte frame headers)
//     that Docker's and Podman's attach endpoints send.
package confine
