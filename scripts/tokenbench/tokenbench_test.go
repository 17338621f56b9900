package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestTasks checks the task table against what the issue asks for and
// against the servers: every kind covered, every server a task names
// configured, and its code calling only the servers it names.
func TestTasks(t *testing.T) {
	wantKinds := []string{"chaining", "fan-out", "aggregation", "search-then-call", "session state", "pandas", "direct should win", "error"}
	proxy := regexp.MustCompile(`mcp_([a-z_]+)\.`)
	names := map[string]bool{}
	var kinds []string
	for _, tk := range tasks {
		t.Run(tk.name, func(t *testing.T) {
			if names[tk.name] {
				t.Errorf("task name %q is used twice", tk.name)
			}
			names[tk.name] = true
			kinds = append(kinds, tk.kind)
			if tk.prompt == "" || len(tk.runs) == 0 || tk.direct == nil || tk.check == nil || len(tk.servers) == 0 {
				t.Fatalf("task %q lacks a prompt, code, a direct way, a check or its servers", tk.name)
			}
			for _, s := range tk.servers {
				if !slices.ContainsFunc(servers, func(d downstream) bool { return d.name == s }) {
					t.Errorf("uses server %q, which is not configured", s)
				}
			}
			for _, code := range tk.runs {
				for _, m := range proxy.FindAllStringSubmatch(code, -1) {
					if !slices.Contains(tk.servers, m[1]) {
						t.Errorf("its code calls mcp_%s, a server it does not list in servers: %s", m[1], code)
					}
				}
				if strings.Contains(code, "/tmp/") {
					t.Errorf("its code names a path outside $ROOT: %s", code)
				}
			}
		})
	}
	for _, k := range wantKinds {
		if !slices.ContainsFunc(kinds, func(kind string) bool { return strings.Contains(kind, k) }) {
			t.Errorf("no task of kind %q", k)
		}
	}
	if len(servers) < 5 {
		t.Errorf("%d servers configured, want at least 5", len(servers))
	}
}

// TestMeasure checks the arithmetic of a transcript's figures on made-up
// counts: the context grows by each call and result, every turn rereads it,
// and the final turn is counted.
func TestMeasure(t *testing.T) {
	tr := transcript{
		base:   []string{"tools", "prompt"},
		writes: [][]string{{"call1a", "call1b"}, {"call2"}},
		reads:  [][]string{{"res1a", "res1b"}, {"res2"}},
		extra:  tokens{5, 5},
	}
	texts := tr.texts()
	if diff := cmp.Diff([]string{"tools", "prompt", "call1a", "call1b", "res1a", "res1b", "call2", "res2"}, texts); diff != "" {
		t.Fatalf("texts (-want +got):\n%s", diff)
	}
	counts := []tokens{{100, 90}, {10, 10}, {3, 3}, {4, 4}, {50, 40}, {60, 50}, {2, 2}, {7, 7}}
	got := tr.measureWith(counts)
	// Turn 1 reads 110/100; turn 2 reads that plus 3+4+50+60 / 3+4+40+50;
	// the final turn reads that plus 2+7 and the image's 5.
	want := measure{
		Turns:   3,
		Context: tokens{241, 211},
		Input:   tokens{110 + 227 + 241, 100 + 197 + 211},
		Output:  tokens{9, 9},
		Bytes:   len(strings.Join(texts, "")),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("measure (-want +got):\n%s", diff)
	}

	// Without the tools of servers the task does not use, each turn reads
	// them no more.
	serverTok := map[string]tokens{}
	for i, s := range servers {
		serverTok[s.name] = tokens{i + 1, i + 1}
	}
	tk := task{servers: []string{servers[0].name}}
	unused := 0
	for i := range servers[1:] {
		unused += i + 2
	}
	only := withoutServers(got, tk, serverTok)
	if only.Context[1] != got.Context[1]-unused || only.Input[1] != got.Input[1]-3*unused {
		t.Errorf("withoutServers: context %d, input %d; want %d and %d", only.Context[1], only.Input[1], got.Context[1]-unused, got.Input[1]-3*unused)
	}
}

// TestTokenizer counts a known text with the real tokenizer from the
// clients' npm tree.
func TestTokenizer(t *testing.T) {
	clients := testenv.NPMClients(t)
	testenv.NPMModule(t, "gpt-tokenizer")
	got, err := tokenizer{clients: clients}.count([]string{"hello world", ""})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]tokens{{2, 2}, {0, 0}}, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

// TestConverse replays a conversation against a fake Messages API: a tool
// call, then an answer; the usage is summed and the call's result is sent
// back with its id.
func TestConverse(t *testing.T) {
	var requests []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") != "test-key" || r.Header.Get("anthropic-version") == "" {
			http.Error(w, "bad headers", http.StatusUnauthorized)
			return
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		requests = append(requests, req)
		if len(requests) == 1 {
			io.WriteString(w, `{"content":[{"type":"tool_use","id":"tu1","name":"run_python","input":{"code":"print(1)"}}],"stop_reason":"tool_use","usage":{"input_tokens":100,"output_tokens":10}}`)
			return
		}
		io.WriteString(w, `{"content":[{"type":"text","text":"It printed 1."}],"stop_reason":"end_turn","usage":{"input_tokens":120,"output_tokens":5,"cache_read_input_tokens":90}}`)
	}))
	defer srv.Close()
	rp := replayer{url: srv.URL, key: "test-key", model: "test-model", client: srv.Client()}
	var calls []string
	got, err := rp.converse(t.Context(), []apiTool{{Name: "run_python", InputSchema: json.RawMessage(`{"type":"object"}`)}}, "Print 1.",
		func(_ context.Context, name string, input map[string]any) (string, bool, error) {
			calls = append(calls, name+" "+input["code"].(string))
			return "1\n", false, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	want := replayed{Turns: 2, Usage: apiUsage{InputTokens: 220, OutputTokens: 15, CacheRead: 90}, Answer: "It printed 1."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"run_python print(1)"}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if len(requests) != 2 {
		t.Fatalf("%d requests, want 2", len(requests))
	}
	msgs := requests[1]["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	if last["type"] != "tool_result" || last["tool_use_id"] != "tu1" || last["content"] != "1\n" {
		t.Errorf("the second request's last block = %v, want the tool's result for tu1", last)
	}
}
