package host

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/discovery/secret"
)

// TestResultsMaskSecrets: a server's secrets that its tool result echoes
// reach the code, the audit log and the learnt result types as [secret];
// a secret under secret.MinMasked bytes is left; an error that quotes the
// server's URL has its secret masked.
func TestResultsMaskSecrets(t *testing.T) {
	const token, short = "tok-9f8e7d6c5b4a", "abc"
	url := mathServer(t)
	srv := &discovery.Server{Name: "math", Transport: discovery.Streamable, URL: url + "/?k=" + token,
		Secrets: secret.List{secret.New(token), secret.New(short)}}
	// Nothing listens on a port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String() + "/mcp?k=" + token
	ln.Close()
	dead := &discovery.Server{Name: "dead", Transport: discovery.Streamable, URL: deadURL, Secrets: secret.List{secret.New(token)}}
	d := testDirectory(t, srv, dead)
	dir := t.TempDir()
	d.audit = audit.New(dir, audit.Options{Contents: true})
	h := d.host(Run{})

	got, err := hostCall(t, h, "call_tool", map[string]any{"server": "math", "tool": "echo",
		"arguments": map[string]any{"message": "token=" + token + " short=" + short}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(got)
	if strings.Contains(string(raw), token) || !strings.Contains(string(raw), "token=[secret] short="+short) {
		t.Errorf("result = %s: want the token masked and the short secret kept", raw)
	}

	_, err = hostCall(t, h, "call_tool", map[string]any{"server": "dead", "tool": "echo", "arguments": map[string]any{}})
	if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "k=[secret]") {
		t.Errorf("error of a server that does not answer: %v; want its URL with the token masked", err)
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), token) {
			t.Errorf("audit file %s holds the token:\n%s", f, b)
		}
	}
	if len(files) == 0 {
		t.Errorf("no audit file in %s", dir)
	}
}
