package front

import (
	"log/slog"
	"strings"

	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/server"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// testOptions are the front's options from cfg, as the composition root
// (package bridge) fills them in.
func testOptions(cfg settings.Config) Options {
	return Options{
		Addr: cfg.HTTP, Auth: cfg.HTTPAuth, Token: cfg.HTTPToken, StateDir: cfg.StateDir, Origins: cfg.HTTPOrigins,
		ConfigDir: cfg.ConfigDir, MaxMCPSessions: cfg.MaxMCPSessions, SessionIdle: cfg.SessionIdle, Grace: cfg.ShutdownGrace,
		Debug: cfg.LogLevel <= slog.LevelDebug, Setting: func(key string) string { return settings.EnvPrefix + strings.ToUpper(key) },
	}
}

// testServer is the MCP server of opts with the limits of cfg, as the
// composition root builds it.
func testServer(cfg settings.Config, opts server.Options) *server.Server {
	opts.Limits = server.Limits{
		Sessions: cfg.Sessions, MaxCodeSize: cfg.MaxCodeSize, Timeout: cfg.Timeout, MaxTimeout: cfg.MaxTimeout,
		OutputLimit: cfg.OutputLimit, MaxQueued: cfg.MaxQueued,
		Attachments: host.AttachLimits{Max: cfg.MaxAttachment, MaxN: cfg.MaxAttachN, MaxSum: cfg.MaxAttachSum},
	}
	opts.ConfigDir, opts.Debug = cfg.ConfigDir, cfg.LogLevel <= slog.LevelDebug
	opts.Setting = func(key string) string { return settings.EnvPrefix + strings.ToUpper(key) }
	return server.NewServer(opts)
}
