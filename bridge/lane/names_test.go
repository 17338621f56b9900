package lane

import (
	"regexp"
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	tests := []struct {
		server, tool, want string
	}{
		{"github", "create_issue", "github__create_issue"},
		{"my-server", "get-sum", "my-server__get-sum"},
		{"a_b", "c", "a_b__c"},
		// Not plain: each would read back two ways, or has other characters.
		{"a__b", "c", ""},
		{"a_", "_b", ""},
		{"mem", "read.file", ""},
		{"ünïcode", "tool", ""},
		{strings.Repeat("s", 40), strings.Repeat("t", 40), ""},
		{"s", strings.Repeat("t", 100), ""},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := Name(tt.server, tt.tool)
		if tt.want != "" && got != tt.want {
			t.Errorf("Name(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
		if !valid.MatchString(got) {
			t.Errorf("Name(%q, %q) = %q: not within clients' limits", tt.server, tt.tool, got)
		}
		if got != Name(tt.server, tt.tool) {
			t.Errorf("Name(%q, %q) is not stable", tt.server, tt.tool)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("Name(%q, %q) = %q, the name of %s too", tt.server, tt.tool, got, prev)
		}
		seen[got] = tt.server + "/" + tt.tool
	}
	// The pairs that a plain join would confuse get different names.
	if Name("a__b", "c") == Name("a", "b__c") {
		t.Error("a__b/c and a/b__c share a name")
	}
}

// TestPlainName: with plain names a tool keeps its own name when a client
// can take it, and the prefixed form otherwise.
func TestPlainName(t *testing.T) {
	for _, tt := range []struct{ server, tool, want string }{
		{"everything", "get-sum", "get-sum"},
		{"fs", "read_file", "read_file"},
		{"fs", "read.file", Name("fs", "read.file")},
		{"fs", strings.Repeat("x", MaxName+1), Name("fs", strings.Repeat("x", MaxName+1))},
	} {
		if got := PlainName(tt.server, tt.tool); got != tt.want {
			t.Errorf("PlainName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
}
