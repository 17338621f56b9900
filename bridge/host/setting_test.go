package host

import (
	"strings"

	"github.com/codebridge-mcp/codebridge/bridge/settings"
)

// envName names a setting as the composition root (package bridge) does.
func envName(key string) string { return settings.EnvPrefix + strings.ToUpper(key) }
