package bridge

import (
	"os"
	"strings"
	"testing"
)

// TestREADMESettings keeps the settings table of docs/settings.md in step with
// the code: every variable codebridge reads is documented with its default.
func TestREADMESettings(t *testing.T) {
	doc, err := os.ReadFile("../docs/settings.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		name := EnvPrefix + strings.ToUpper(s.key)
		def := "(unset)"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		row := "| `" + name + "` | " + def + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/settings.md has no settings row starting %q", row)
		}
	}
}
