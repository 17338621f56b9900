//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// jaegerEnv names the Jaeger binary that scripts/jaeger.sh builds.
const jaegerEnv = "CODEBRIDGE_TEST_JAEGER"

// jaeger is a Jaeger started by a test: its OTLP/HTTP receiver and its
// query API, on loopback ports of their own, traces kept in memory.
type jaeger struct {
	otlp  string // the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT
	query string // the query API's base URL
}

// startJaeger starts the Jaeger of CODEBRIDGE_TEST_JAEGER, stopped when
// the test ends; it skips the test without it (fails it in CI).
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := os.Getenv(jaegerEnv)
	if bin == "" {
		testenv.Missing(t, "Jaeger ("+jaegerEnv+")", "run `eval \"$(scripts/jaeger.sh env)\"`, which builds it once from its Go module, as scripts/test.sh does")
		return nil
	}
	otlp, query, queryGRPC := "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	// Every endpoint on loopback, and the collector's own telemetry off
	// (its metrics would listen on port 8888).
	config := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %s
    grpc:
      endpoint: %s
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, query, queryGRPC, otlp)
	file := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cmd := exec.Command(bin, "--config", file)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Jaeger: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("Jaeger's log:\n%s", logs.String())
		}
	})
	j := &jaeger{otlp: "http://" + otlp, query: "http://" + query}
	testenv.Eventually(t, "Jaeger answers on its query API and its OTLP receiver", func() bool {
		select {
		case <-exited:
			t.Fatalf("Jaeger exited:\n%s", logs.String())
		default:
		}
		if res, err := http.Get(j.query + "/api/services"); err != nil || res.Body.Close() != nil || res.StatusCode != http.StatusOK {
			return false
		}
		c, err := net.Dial("tcp", otlp)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return j
}

// jaegerSpan is a span as Jaeger's query API answers it.
type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

// parent is the span id s is a child of, "" if none.
func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tag(key string) any {
	for _, tg := range s.Tags {
		if tg.Key == key {
			return tg.Value
		}
	}
	return nil
}

// trace is the spans Jaeger holds of the trace id, none while it has none.
func (j *jaeger) trace(t *testing.T, id string) []jaegerSpan {
	t.Helper()
	res, err := http.Get(j.query + "/api/traces/" + id)
	if err != nil {
		t.Fatalf("asking Jaeger for the trace: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		return nil
	}
	var body struct {
		Data []struct {
			TraceID string       `json:"traceID"`
			Spans   []jaegerSpan `json:"spans"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("Jaeger's answer (%s): %v", res.Status, err)
	}
	var spans []jaegerSpan
	for _, d := range body.Data {
		if d.TraceID == id {
			spans = append(spans, d.Spans...)
		}
	}
	return spans
}

// TestTraceReachesJaeger: a run_python request whose _meta carries a
// client's traceparent leads to one trace in a real Jaeger: the run's span
// as the client span's child, the tool call's span as the run's child, and
// the downstream MCP server getting the tool call's span as its parent in
// the _meta of the tools/call codebridge sent it. No span holds the
// argument the code sent or the answer it got.
func TestTraceReachesJaeger(t *testing.T) {
	requirePodman(t)
	j := startJaeger(t)

	var mu sync.Mutex
	var seen []string // the traceparent of each call the server got
	type args struct {
		Message string `json:"message"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "traced", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes the message."},
		func(_ context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			tp, _ := req.Params.GetMeta()["traceparent"].(string)
			mu.Lock()
			seen = append(seen, tp)
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer-" + a.Message}}}, nil, nil
		})
	down := testenv.ServeOn(t, "127.0.0.1:0", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	dir := t.TempDir()
	writeServers(t, dir, "traced.json", map[string]any{"traced": map[string]any{"url": down.URL}})

	env := slices.DeleteFunc(bridgeEnv(t, dir), func(kv string) bool { return strings.HasPrefix(kv, "OTEL_") })
	env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.otlp, "OTEL_SERVICE_NAME=codebridge-e2e",
		"OTEL_BSP_SCHEDULE_DELAY=100") // milliseconds: the spans go out while the test polls
	cs, logs := session(t, env)

	const traceID, clientSpan = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
	params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": `
r = await call_tool("traced", "echo", {"message": "s3cr3t-argument"})
print(r)`}}
	params.Meta = mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"}
	r := callRunPython(t, cs, params)
	if r.IsError || !strings.Contains(r.Out.Stdout, "answer-s3cr3t-argument") {
		t.Fatalf("the run: %s\nlog:\n%s", r.Text, logs.String())
	}

	var spans []jaegerSpan
	var run, call jaegerSpan
	testenv.Eventually(t, "Jaeger holds the run's span and the tool call's in the client's trace", func() bool {
		spans = j.trace(t, traceID)
		run, call = jaegerSpan{}, jaegerSpan{}
		for _, s := range spans {
			switch s.OperationName {
			case "tools/call run_python":
				run = s
			case "tools/call echo":
				call = s
			}
		}
		return run.SpanID != "" && call.SpanID != ""
	})
	if run.parent() != clientSpan {
		t.Errorf("the run's span is a child of %q, want the client's span %s", run.parent(), clientSpan)
	}
	if call.parent() != run.SpanID {
		t.Errorf("the tool call's span is a child of %q, want the run's %s", call.parent(), run.SpanID)
	}
	if call.tag("gen_ai.tool.name") != "echo" || call.tag("codebridge.server") != "traced" || call.tag("codebridge.outcome") != "ok" {
		t.Errorf("the tool call's tags: %+v", call.Tags)
	}
	if id, _ := run.tag("codebridge.session.id").(string); id == "" || id != r.Out.Session.ID {
		t.Errorf("the run's session id %v, want the result's %q", run.tag("codebridge.session.id"), r.Out.Session.ID)
	}

	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	if want := "00-" + traceID + "-" + call.SpanID + "-01"; len(got) != 1 || got[0] != want {
		t.Errorf("the downstream server got traceparent %q, want %q", got, want)
	}
	for _, s := range spans {
		for _, tg := range s.Tags {
			if strings.Contains(fmt.Sprint(tg.Value), "s3cr3t") {
				t.Errorf("span %q has %s = %v", s.OperationName, tg.Key, tg.Value)
			}
		}
	}
	t.Logf("Jaeger holds %d spans of trace %s; the downstream server got %s", len(spans), traceID, got)
}
