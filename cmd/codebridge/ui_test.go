package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

var uiURLRE = regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/ui/login\?token=(\S+)`)

// TestUICommand: codebridge ui prints a one-time address that signs a
// browser in once; its pages show the audit log's runs; a request for
// another Host is refused; it will not listen off loopback; SIGTERM stops
// it with status 0.
func TestUICommand(t *testing.T) {
	dir := t.TempDir()
	env := bridgeEnv(t, dir)
	var state string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "MCP_BRIDGE_STATE_DIR="); ok {
			state = v
		}
	}
	log := audit.New(audit.Dir(state), audit.Options{})
	if err := log.Write(audit.Record{Time: time.Now(), Session: "sess-from-audit", Run: 4, Server: "files", Tool: "read", DurationMS: 7.5, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	log.Close(t.Context())

	if _, errOut, code := runCLI(t, env, "", "ui", "--addr", "0.0.0.0:0", "--no-browser"); code != 2 || !strings.Contains(errOut, "loopback") {
		t.Errorf("ui --addr 0.0.0.0:0: exit %d, want 2\n%s", code, errOut)
	}

	cmd := exec.Command(binary(t), "ui", "--no-browser")
	cmd.Env = env
	stderr := new(syncBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("codebridge ui stderr:\n%s", stderr.String())
		}
	})
	var m []string
	testenv.Eventually(t, "codebridge ui to print its address", func() bool {
		m = uiURLRE.FindStringSubmatch(stderr.String())
		return m != nil
	})
	base, loginURL := m[1], m[0]

	noRedirect := func(jar http.CookieJar) *http.Client {
		return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	c := noRedirect(newJar())
	resp, err := c.Get(loginURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("the one-time address: %s, cookies %v", resp.Status, resp.Cookies())
	}
	if resp, err := noRedirect(newJar()).Get(loginURL); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the one-time address a second time: %v %v, want 401", resp.Status, err)
	}
	resp, err = c.Get(base + "/ui/runs")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range []string{"sess-from-audit", "files.read", "7.5 ms"} {
		if !strings.Contains(string(body), w) {
			t.Errorf("the runs page does not show %q:\n%s", w, body)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/ui/runs", nil)
	req.Host = "rebound.example:" + base[strings.LastIndex(base, ":")+1:]
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("another Host: %v %v, want 403", resp.Status, err)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("codebridge ui after SIGTERM: %v, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("codebridge ui did not stop within 30 s of SIGTERM")
	}
}

// newJar is a cookie jar.
func newJar() http.CookieJar {
	jar, _ := cookiejar.New(nil)
	return jar
}
