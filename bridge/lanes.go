package bridge

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/lane"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// lanes are the MCP servers of the lanes besides the code lane's
// (bridge/lane), each over the App's directory.
type lanes struct {
	tools  *lane.Tools
	search *lane.Search
}

// newLanes builds the tools and search lanes over a's directory.
func (a *App) newLanes(version string) lanes {
	opts := lane.Options{Dir: a.dir, Logger: a.logger.With("component", "lane"), Version: version, OnClient: a.pool.SetClientCapabilities,
		PlainNames: a.cfg.LaneNames == settings.LaneNamesPlain}
	return lanes{tools: lane.NewTools(opts), search: lane.NewSearch(opts)}
}

// laneServer is the go-sdk server of the lane name; nil for the code lane,
// which a.server serves.
func (a *App) laneServer(name string) *mcp.Server {
	switch name {
	case settings.LaneTools:
		return a.lanes.tools.MCP()
	case settings.LaneSearch:
		return a.lanes.search.MCP()
	}
	return nil
}

// pickLane is the go-sdk server of the lane an HTTP request asks for
// (lane.Select); nil for the code lane.
func (a *App) pickLane(r *http.Request) *mcp.Server {
	return a.laneServer(lane.Select(r, a.cfg.Lane))
}

// close stops the lanes.
func (l lanes) close() {
	l.tools.Close()
	l.search.Close()
}
