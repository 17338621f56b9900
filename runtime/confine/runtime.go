package confine

import (
	"fmt"
	"path/filepath"
	"strings"
)

// GVisor reports whether the OCI runtime named runtime (as an engine names
// it, or a path) is gVisor's runsc: "runsc", a name starting "runsc-", or
// one containing "gvisor". gVisor runs a container on a kernel of its own,
// written in Go, in user space; the sandbox's hardening follows it where it
// differs from Linux (see [Hardened] and [SeccompProfile]).
func GVisor(runtime string) bool {
	name := strings.ToLower(filepath.Base(runtime))
	return name == "runsc" || strings.HasPrefix(name, "runsc-") || strings.Contains(name, "gvisor")
}

// GVisorArgs returns the runsc flags codebridge's sandboxes need, which an
// engine passes to runsc before its subcommand: Docker as the runtime's
// runtimeArgs in daemon.json, Podman through a wrapper script registered as
// the runtime (Podman takes no runtime arguments).
//
//   - --network=none: sandboxes have no network, and gVisor's own network
//     stack then has nothing to do. Without it, a container without network
//     fails to start, on Podman 4.3 and Docker 20.10 alike ("cannot run with
//     network enabled in root network namespace": see [GVisorStartHint]).
//   - --oci-seccomp: gVisor applies the container's seccomp profile to the
//     calls made to its kernel; without it, it ignores the profile.
//   - --host-uds=open: code in the sandbox may connect to the unix socket
//     codebridge mounts into it ([Channel]); without it, the sandbox talks
//     through the engine's attach stream, which is slower.
func GVisorArgs() []string { return []string{"--network=none", "--oci-seccomp", "--host-uds=open"} }

// GVisorStartHint is what to add to an engine's failure to start a
// container under runtime, whose message is msg, when runsc failed for want
// of [GVisorArgs]; "" otherwise.
func GVisorStartHint(runtime, msg string) string {
	if !GVisor(runtime) || !strings.Contains(msg, "network enabled in root network namespace") {
		return ""
	}
	return fmt.Sprintf("the engine runs %s without the flags codebridge's sandboxes need (%s): codebridge setup --runtime runsc registers runsc with them",
		runtime, strings.Join(GVisorArgs(), " "))
}
