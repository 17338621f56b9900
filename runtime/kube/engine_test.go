package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestKubernetesResumeFromAnotherReplica runs code in a sandbox pod, drops
// the stream, and continues the same interpreter from a second engine (a
// second replica) through a new stream: its variables are still there.
func TestKubernetesResumeFromAnotherReplica(t *testing.T) {
	spec := confine.Spec{Command: python.Command(), Channel: python.ChannelEnv, Env: map[string]string{python.WaitLimitEnv: "300"}}
	first := newTestEngine(t, spec, true)
	second := newTestEngine(t, spec, true)

	b, err := first.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	it := python.Start(b.Stream(), protocol.Init{}, python.Limits{})
	res, err := it.Run(t.Context(), python.Program{Code: "import codebridge_runner\nx = 41\nprint(codebridge_runner.STREAM)"}, nil, time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "socket\n" {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	it.Close() // the first replica's stream ends; the pod stays

	r, runs, err := second.resume(t.Context(), b.ID())
	if err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("the resumed interpreter served %d runs, want 1", runs)
	}
	it = python.Resume(r.Stream(), runs, python.Limits{})
	res, err = it.Run(t.Context(), python.Program{Code: "x += 1\nprint(x)"}, nil, time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "42\n" {
		t.Fatalf("run from the second replica: %+v, %v", res, err)
	}

	// The second replica's stream is cut while a run waits on a tool call,
	// as when a replica dies mid-run: the first continues the session.
	asked := make(chan struct{})
	host := hostFunc(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		close(asked)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	go it.Run(t.Context(), python.Program{Code: "x = 0\nsearch_tool_docs_sync('x')\nx = -1"}, host, time.Minute)
	<-asked
	r.st.Close()
	it.Close()
	r, runs, err = first.resume(t.Context(), b.ID())
	if err != nil {
		t.Fatal(err)
	}
	if runs != 3 {
		t.Errorf("after a cut run the interpreter served %d runs, want 3", runs)
	}
	it = python.Resume(r.Stream(), runs, python.Limits{})
	defer it.Close()
	res, err = it.Run(t.Context(), python.Program{Code: "print(x)"}, nil, time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "0\n" {
		t.Fatalf("run after the cut one: %+v, %v (want the cut run's first line done, its last not)", res, err)
	}
	if err := r.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// hostFunc is a python.Host of one function.
type hostFunc func(ctx context.Context, method string, params json.RawMessage) (any, error)

func (f hostFunc) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return f(ctx, method, params)
}

// TestKubernetesAttach runs a command that talks over its attached stdin and
// stdout, its exit code and stderr.
func TestKubernetesAttach(t *testing.T) {
	e := newTestEngine(t, confine.Spec{Command: []string{"python3", "-c", "import sys\nprint('ready', flush=True)\nfor l in sys.stdin:\n    if l == 'quit\\n': break\n    print(l.strip().upper(), flush=True)\nsys.stderr.write('bye')\nsys.exit(3)"}}, false)
	b, err := e.Start(t.Context(), sandbox.Wait{})
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

// TestKubernetesOOM: code past its memory limit is killed, and Exit says
// so.
func TestKubernetesOOM(t *testing.T) {
	e := newTestEngine(t, confine.Spec{Command: []string{"python3", "-c", "print('allocating', flush=True); b = b'x' * (256 << 20); print('survived')"}, Memory: 64 << 20}, false)
	b, err := e.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove(t.Context())
	out, _ := io.ReadAll(b.Stream())
	if string(out) != "allocating\n" {
		t.Errorf("stdout %q, want only %q", out, "allocating\n")
	}
	if code, oom, err := b.Exit(t.Context()); err != nil || code != 137 || !oom {
		t.Errorf("exit %d, oom %v, %v; want 137 (SIGKILL), true", code, oom, err)
	}
}

// TestKubernetesCloseDeletesPods: an engine's Close deletes its pods, warm
// or in a session, and no other replica's.
func TestKubernetesCloseDeletesPods(t *testing.T) {
	spec := confine.Spec{Command: python.Command(), Channel: python.ChannelEnv, Env: map[string]string{python.WaitLimitEnv: "300"}}
	other := newTestEngine(t, spec, true)
	kept, err := other.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, spec, true)
	var names []string
	for range 3 {
		b, err := e.Start(t.Context(), sandbox.Wait{})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, b.ID())
	}
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Close asked for the deletion: the pods are being deleted (the
	// kubelet's part is the cluster's) or gone.
	pods, err := other.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if slices.Contains(names, p.Name) && !p.Deleted {
			t.Errorf("pod %s of the closed engine is not being deleted", p.Name)
		}
	}
	if !slices.ContainsFunc(pods, func(p PodSummary) bool { return p.Name == kept.ID() && !p.Deleted }) {
		t.Errorf("the other replica's pod %s went too", kept.ID())
	}
}

// TestKubernetesSweep: the sweep deletes ended pods and the pods of dead
// codebridge processes of this host, and leaves the others.
func TestKubernetesSweep(t *testing.T) {
	dead := exec.Command("sleep", "3600")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadStart, _ := confine.ProcessStart(dead.Process.Pid)
	dead.Process.Kill()
	dead.Wait()
	me := confine.Self()
	host := me.Host
	sleep := confine.Spec{Command: []string{"python3", "-c", "import time; time.sleep(600)"}}
	e := newTestEngine(t, sleep, false)
	owners := map[string]map[string]string{
		"dead":       confine.Owner{Host: host, PID: dead.Process.Pid, Start: deadStart}.Labels(),
		"live":       me.Labels(),
		"other host": confine.Owner{Host: "not-" + host, PID: dead.Process.Pid}.Labels(),
	}
	ids := map[string]string{}
	for name, owner := range owners {
		b, err := e.startOwned(t.Context(), sleep, owner)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = b.ID()
	}
	ended, err := e.startOwned(t.Context(), confine.Spec{Command: []string{"true"}}, me.Labels())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ended.Exit(t.Context()); err != nil {
		t.Fatal(err)
	}
	ids["ended"] = ended.ID()
	wantGone := map[string]bool{"dead": true, "ended": true}
	if _, err := e.Sweep(t.Context(), me, 0); err != nil {
		t.Fatal(err)
	}
	pods, err := e.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		present := slices.ContainsFunc(pods, func(p PodSummary) bool { return p.Name == id && !p.Deleted })
		if present == wantGone[name] {
			t.Errorf("%s owner's pod: present %v, want %v", name, present, !wantGone[name])
		}
	}
}

// TestKubernetesWarmPodEndsWithReplica kills a replica (SIGKILL) that holds a
// warm pod: the pod's stream ends with it, and its interpreter, which has
// served no run, exits, with no replica to end it.
func TestKubernetesWarmPodEndsWithReplica(t *testing.T) {
	e := newTestEngine(t, confine.Spec{}, false) // to look, and to delete what the child left
	child, f := testenv.Child(t, warmChildEnv+"="+testenv.MinimalImage())
	name := f[0]
	t.Cleanup(func() { e.RemovePod(context.Background(), name) })
	child.Process.Kill()
	child.Wait()
	testenv.Eventually(t, "the warm pod of the killed replica ends", func() bool {
		pods, err := e.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(pods, func(p PodSummary) bool { return p.Name == name })
		return i < 0 || !pods[i].Ended.IsZero()
	})
}

// TestKubernetesUnschedulable: a pod no node can hold fails its start with
// the scheduler's reason, and is deleted.
func TestKubernetesUnschedulable(t *testing.T) {
	e := newTestEngine(t, confine.Spec{Command: []string{"true"}, Memory: 1 << 50}, false)
	_, err := e.Start(t.Context(), sandbox.Wait{})
	if err == nil || !strings.Contains(err.Error(), "cannot be scheduled") || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("start: %v, want the scheduler's reason", err)
	}
	pods, err := e.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Labels[LabelReplica] == e.replica && !p.Deleted {
			t.Errorf("pod %s left after its failed start", p.Name)
		}
	}
}

// TestKubernetesMissingSeccompProfile: a Localhost profile the node lacks
// fails the start with the runtime's reason; it does not fall back to
// another profile.
func TestKubernetesMissingSeccompProfile(t *testing.T) {
	e := newTestEngine(t, confine.Spec{Command: []string{"true"}}, false)
	e.opts.Seccomp = "codebridge-test-absent.json"
	_, err := e.Start(t.Context(), sandbox.Wait{})
	if err == nil || !strings.Contains(err.Error(), "CreateContainerError") || !strings.Contains(err.Error(), "codebridge-test-absent.json") {
		t.Fatalf("start: %v, want the runtime's refusal naming the profile", err)
	}
}
