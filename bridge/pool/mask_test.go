package pool

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// TestMaskServerSecrets: a server's secrets are masked in its stderr lines
// (the log and the tail of errors), in errors that quote its URL, and in its
// tool definitions.
func TestMaskServerSecrets(t *testing.T) {
	const token = "tok-0123456789"
	def := &discovery.Server{Name: "s", Transport: discovery.Streamable, URL: "https://h/mcp?k=" + token,
		Secrets: secret.List{secret.New(token)}}

	var logged []string
	c := newConn(def, 1, 1, 3, nil)
	c.stderr.onLine = func(l string) { logged = append(logged, l) }
	fmt.Fprint(c.stderr, "using "+token+"\nhalf "+token)
	if diff := cmp.Diff([]string{"using [secret]", "half [secret]"}, c.stderr.Tail()); diff != "" {
		t.Errorf("Tail (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"using [secret]"}, logged); diff != "" {
		t.Errorf("logged lines (-want +got):\n%s", diff)
	}

	err := masked(def, fmt.Errorf("calling: %w (%s)", ErrServerExited, hint(def)))
	if !errors.Is(err, ErrServerExited) || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "k=[secret]") {
		t.Errorf("masked error = %v", err)
	}

	tools := maskTools(def.Secrets, []*mcp.Tool{{Name: "a", Description: "uses " + token}, {Name: "b", Description: "plain"}})
	if tools[0].Description != "uses [secret]" || tools[1].Description != "plain" {
		t.Errorf("tools = %q, %q", tools[0].Description, tools[1].Description)
	}
}

type remedyError struct{}

func (remedyError) Error() string  { return "sign in: run codebridge login x" }
func (remedyError) Remedy() string { return "codebridge login x" }

// TestWithHint: a failed start gets what to check, unless its error says
// itself what to do.
func TestWithHint(t *testing.T) {
	def := &discovery.Server{Name: "x", Transport: discovery.Streamable, URL: "https://h/mcp"}
	if err := withHint(def, fmt.Errorf("calling: %w", remedyError{})); strings.Contains(err.Error(), "reachable") {
		t.Errorf("withHint(remedied) = %q; want no hint", err)
	}
	if err := withHint(def, errors.New("EOF")); !strings.Contains(err.Error(), "check that https://h/mcp is reachable") {
		t.Errorf("withHint(EOF) = %q; want the hint", err)
	}
}
