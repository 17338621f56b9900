package server

import (
	"log/slog"
	"strings"

	"github.com/codebridge-mcp/codebridge/bridge/host"
	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// testOptions is opts with the limits of cfg, as the composition root
// (package bridge) fills them in.
func testOptions(cfg settings.Config, opts Options) Options {
	opts.Limits = Limits{
		Sessions: cfg.Sessions, MaxCodeSize: cfg.MaxCodeSize, Timeout: cfg.Timeout, MaxTimeout: cfg.MaxTimeout,
		OutputLimit: cfg.OutputLimit, MaxQueued: cfg.MaxQueued,
		Attachments: host.AttachLimits{Max: cfg.MaxAttachment, MaxN: cfg.MaxAttachN, MaxSum: cfg.MaxAttachSum},
		TaskAfter:   cfg.TaskAfter, MaxTasks: cfg.MaxTasks, TaskTTL: cfg.TaskTTL,
	}
	opts.ConfigDir = cfg.ConfigDir
	opts.Debug = cfg.LogLevel <= slog.LevelDebug
	opts.Setting = func(key string) string { return settings.EnvPrefix + strings.ToUpper(key) }
	return opts
}
