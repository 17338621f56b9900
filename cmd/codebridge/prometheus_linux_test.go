package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestPrometheusScrapesMetrics: a real Prometheus (Debian's, installed by
// scripts/prometheus.sh) scrapes /metrics of codebridge serve --http with
// the bearer token, after sandboxed code made calls to server-everything,
// and PromQL counts exactly those calls; the calls to a made-up server
// and a made-up tool add one series each, server="" and tool="", not
// series of their names.
func TestPrometheusScrapesMetrics(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.Missing(t, "prometheus", "scripts/prometheus.sh installs Debian's")
	}
	const calls = 7
	dir := t.TempDir()
	writeServers(t, dir, "e.json", map[string]any{"everything": map[string]any{"command": testenv.NPMBin(t, "mcp-server-everything")}})
	hb := startHTTP(t, bridgeEnv(t, dir))
	cs := hb.goClient(t, hb.Token)
	out := mustRun(t, cs, fmt.Sprintf(`
for i in range(%d):
    await call_tool("everything", "echo", {"message": f"m{i}"})
for server, tool in [("made-up-server", "made-up-tool"), ("everything", "made-up-tool")]:
    try:
        await call_tool(server, tool, {})
    except MCPError as e:
        print(e.code)
`, calls))
	if out != "unknown_server\nunknown_tool\n" {
		t.Fatalf("run printed %q, want the two made-up calls' codes", out)
	}

	api := startPrometheus(t, prom, strings.TrimPrefix(hb.Base, "http://"), hb.Token)
	// The calls were all made before Prometheus started: its first scrape
	// has them all, and the query asks for exactly that.
	want := map[string]float64{
		`sum(codebridge_tool_calls_total{server="everything",tool="echo",outcome="ok"})`:                            calls,
		`sum(codebridge_tool_calls_total{server="",tool="",outcome="unknown_server"})`:                              1,
		`sum(codebridge_tool_calls_total{server="everything",tool="",outcome="unknown_tool"})`:                      1,
		`count(codebridge_tool_calls_total)`:                                                                        3,
		`sum(codebridge_runs_total{outcome="ok"})`:                                                                  1,
		`codebridge_tool_call_duration_seconds_count{server="everything"}`:                                          calls + 1,
		`count(codebridge_tool_calls_total{tool=~"made-up.*"} or codebridge_tool_calls_total{server=~"made-up.*"})`: 0,
	}
	var got float64
	var ok bool
	first := `sum(codebridge_tool_calls_total{server="everything",tool="echo",outcome="ok"})`
	testenv.Eventually(t, "Prometheus to have scraped codebridge", func() bool {
		got, ok = promQuery(t, api, first)
		return ok
	})
	for q, w := range want {
		got, ok = promQuery(t, api, q)
		if w == 0 && !ok {
			continue // an empty vector: no such series
		}
		if !ok || got != w {
			t.Errorf("%s = %v (result: %v), want %v", q, got, ok, w)
		}
	}
}

// startPrometheus starts prometheus on a free loopback port, scraping
// target's /metrics every second with token, its storage in a temporary
// folder, and returns its API's base URL; the test's cleanup stops it and
// waits for it to exit.
func startPrometheus(t *testing.T, prom, target, token string) string {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: codebridge
    metrics_path: /metrics
    authorization:
      credentials_file: %s
    static_configs:
      - targets: [%q]
`, tokenFile, target)
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + freePort(t)
	stderr := new(syncBuffer)
	cmd := exec.Command(prom, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-exited
			t.Error("prometheus did not stop within a minute of SIGTERM; killed")
		}
		if t.Failed() {
			t.Logf("prometheus output:\n%s", stderr.String())
		}
	})
	api := "http://" + listen
	testenv.Eventually(t, "prometheus to be ready", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited: %v\n%s", err, stderr.String())
		default:
		}
		resp, err := http.Get(api + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return api
}

// promQuery runs an instant PromQL query whose answer is one number, and
// says whether the answer had a sample.
func promQuery(t *testing.T, api, query string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"` // [time, "value"]
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("decoding the answer to %s: %v", query, err)
	}
	if answer.Status != "success" {
		t.Fatalf("query %s: %s %s", query, answer.Status, answer.Error)
	}
	if len(answer.Data.Result) == 0 {
		return 0, false
	}
	if len(answer.Data.Result) != 1 {
		t.Fatalf("query %s gave %d samples, want 1", query, len(answer.Data.Result))
	}
	s, _ := answer.Data.Result[0].Value[1].(string)
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatalf("query %s: value %q", query, s)
	}
	return v, true
}
