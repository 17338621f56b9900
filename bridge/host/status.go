package host

import "github.com/codebridge-mcp/codebridge/discovery"

// Quarantined counts the quarantined tools of each configured, enabled
// server by name, as a run would find them now, from the server's last
// tool list (its saved manifest, which every fresh listing replaces):
// nothing is started or listed, and a server never listed is left out. A
// pin file that cannot be read counts every tool, as a run holds them.
func (d *Directory) Quarantined() map[string]int {
	out := map[string]int{}
	if d.manifests == nil {
		return out
	}
	for _, srv := range d.snap.Load().servers {
		m, ok := d.manifests.Load(srv)
		if !ok {
			continue
		}
		pins, _, err := d.manifests.LoadPins(srv.Name)
		if err != nil {
			out[srv.Name] = len(m.Tools)
			continue
		}
		n := 0
		for _, st := range pins.States(m.Tools) {
			if st.Held(d.quarantineNew) {
				n++
			}
		}
		out[srv.Name] = n
	}
	return out
}

// Servers are the configured, enabled servers, sorted by name.
func (d *Directory) Servers() []*discovery.Server {
	return d.snap.Load().servers
}
