package kube

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// TestKubernetesResumeFromAnotherReplica runs code in a sandbox pod, drops
// the stream, and continues the same interpreter from a second engine (a
// second replica) through a new stream: its variables are still there.
func TestKubernetesResumeFromAnotherReplica(t *testing.T) {
	spec := confine.Spec{Command: python.Command(), Channel: python.ChannelEnv, Env: map[string]string{python.WaitLimitEnv: "300"}}
	first := newTestEngine(t, spec, true)
	second := newTestEngine(t, spec, true)

	b, err := first.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	it := python.Start(b.Stream(), protocol.Init{}, python.Limits{})
	res, err := it.Run(t.Context(), python.Program{Code: "import codebridge_runner\nx = 41\nprint(codebridge_runner.STREAM)"}, nil, time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "socket\n" {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	it.Close() // the first replica's stream ends; the pod stays

	r, runs, err := second.Resume(t.Context(), b.ID())
	if err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("the resumed interpreter served %d runs, want 1", runs)
	}
	it = python.Resume(r.Stream(), runs, python.Limits{})
	defer it.Close()
	res, err = it.Run(t.Context(), python.Program{Code: "x += 1\nprint(x)"}, nil, time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "42\n" {
		t.Fatalf("run from the second replica: %+v, %v", res, err)
	}
	if err := r.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestKubernetesAttach runs a command that talks over its attached stdin and
// stdout, its exit code and stderr.
func TestKubernetesAttach(t *testing.T) {
	e := newTestEngine(t, confine.Spec{Command: []string{"python3", "-c", "import sys\nprint('ready', flush=True)\nfor l in sys.stdin:\n    if l == 'quit\\n': break\n    print(l.strip().upper(), flush=True)\nsys.stderr.write('bye')\nsys.exit(3)"}}, false)
	b, err := e.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(t.Context())
	br := bufio.NewReader(b.Stream())
	if l, err := br.ReadString('\n'); l != "ready\n" {
		t.Fatalf("first line %q, %v", l, err)
	}
	for _, word := range []string{"hello", strings.Repeat("x", 1<<20)} {
		if _, err := io.WriteString(b.Stream(), word+"\n"); err != nil {
			t.Fatal(err)
		}
		if l, err := br.ReadString('\n'); l != strings.ToUpper(word)+"\n" {
			t.Fatalf("answer %.10q (%d bytes), %v", l, len(l), err)
		}
	}
	io.WriteString(b.Stream(), "quit\n")
	<-b.Done()
	code, oom, err := b.Exit(t.Context())
	if err != nil || code != 3 || oom {
		t.Errorf("exit %d, oom %v, %v; want 3", code, oom, err)
	}
	if b.Stderr() != "bye" {
		t.Errorf("stderr %q, want bye", b.Stderr())
	}
}
