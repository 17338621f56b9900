package enginekit

import (
	"log/slog"
	"sync"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// Declined tells, once per connection to an engine, that a container could
// not connect to its socket and talks through the engine's attach stream
// instead, which makes tool calls slower. The zero value logs a warning.
type Declined struct {
	// Notify, if set, is told instead of the log: the container's short ID
	// and why.
	Notify func(container, reason string)
	once   sync.Once
}

// Negotiate has container id take its stream ([confine.Attached.Negotiate])
// and tells d if it could not connect to its socket. engine names the
// engine in the warning, e.g. "Podman".
func (d *Declined) Negotiate(at *confine.Attached, engine, id string, log *slog.Logger) {
	short := ShortID(id)
	at.Negotiate(func(reason string) {
		d.once.Do(func() {
			if d.Notify != nil {
				d.Notify(short, reason)
				return
			}
			log.Warn("a sandbox could not connect to its socket and talks through "+engine+"'s attach stream, which makes tool calls slower",
				"container", short, "reason", reason)
		})
	}, log.With("container", short))
}
