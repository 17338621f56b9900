package podman

import (
	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// A container's stream ([enginekit.Container.Stream]) is its attached stdin and stdout,
// which Podman relays through its API service and conmon: two more processes
// on the path of every message. Where Podman runs on this host, a container
// whose [confine.Spec.Channel] is set gets a unix socket instead
// ([confine.Channel]).

// AddChannel gives the container its socket's folder, bind-mounted
// read-only, and names the socket in the environment variable env
// ([enginekit.CreateRequest]).
func (cs *createSpec) AddChannel(env string, ch *confine.Channel) {
	cs.Env[env] = confine.SocketPath
	cs.Mounts = append(cs.Mounts, mount{Destination: confine.MountDir, Type: "bind", Source: ch.Dir(), Options: []string{"ro", "nosuid", "nodev", "noexec"}})
}
