package main

import "runtime/debug"

// module is codebridge's package path, for install lines.
const module = "github.com/codebridge-mcp/codebridge/cmd/codebridge"

// stampedVersion is set by release builds (scripts/release.sh, .goreleaser.yaml):
// -ldflags "-X main.stampedVersion=v1.2.3".
var stampedVersion string

// version is the stamped release version, else the module version when built
// by `go install`/`go run pkg@version`, else the VCS revision.
func version() string {
	if stampedVersion != "" {
		return stampedVersion
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}
