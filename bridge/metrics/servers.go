package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// serverStates are the states of codebridge_downstream_servers, each a
// series even when no server is in it.
var serverStates = []string{"configured", "starting", "running", "failed", "disabled"}

// serversCollector reads the downstream servers when scraped.
type serversCollector struct {
	s Servers
}

var (
	serversDesc = prometheus.NewDesc(Namespace+"_downstream_servers",
		"Configured downstream MCP servers, by state (configured: not running; starting; running; failed; disabled).",
		[]string{"state"}, nil)
	quarantinedDesc = prometheus.NewDesc(Namespace+"_quarantined_tools",
		"Tools of a server held back until approved (changed since pinned, flagged, repeated, or new under quarantine_new), from its last tool list.",
		[]string{"server"}, nil)
	signInDesc = prometheus.NewDesc(Namespace+"_server_sign_in",
		"1 for the sign-in state a server that codebridge signs in to (OAuth) is in, 0 for the others.",
		[]string{"server", "state"}, nil)
)

// Describe implements [prometheus.Collector].
func (c *serversCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- serversDesc
	ch <- quarantinedDesc
	ch <- signInDesc
}

// Collect implements [prometheus.Collector].
func (c *serversCollector) Collect(ch chan<- prometheus.Metric) {
	states := c.s.States()
	for _, st := range serverStates {
		ch <- prometheus.MustNewConstMetric(serversDesc, prometheus.GaugeValue, float64(states[st]), st)
	}
	for server, n := range c.s.Quarantined() {
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, float64(n), server)
	}
	for server, state := range c.s.SignIns() {
		for _, st := range signInStates {
			v := 0.0
			if state == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(signInDesc, prometheus.GaugeValue, v, server, st)
		}
	}
}
