package settings

import (
	"os"
	"strings"
	"testing"
)

// TestREADMESettings keeps the README's settings table in step with the code:
// every variable codebridge reads is documented with its default.
func TestREADMESettings(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
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
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no settings row starting %q", row)
		}
	}
}
