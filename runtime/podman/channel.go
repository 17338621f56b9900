package podman

import (
	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// A container's stream ([enginekit.Container.Stream]) is its attached stdin and stdout,
// which Podman relays through its API service and conmon: two more processes
// on the path of every message. Where Podman runs on this host, a container
// whose [confine.Spec.Channel] is set gets a unix socket instead
// ([confine.Channel]).

// channelMount is the bind mount that shows a socket's folder to the
// container.
func channelMount(ch *confine.Channel) mount {
	return mount{Destination: confine.MountDir, Type: "bind", Source: ch.Dir(), Options: []string{"ro", "nosuid", "nodev", "noexec"}}
}

// negotiate has the container take its stream ([enginekit.Declined.Negotiate]);
// a container that could not connect to its socket is reported once per
// client.
func (ct *APIContainer) negotiate() {
	ct.c.declined.Negotiate(ct.Attached, "Podman", ct.id, ct.c.log)
}
