package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/runtime/kube/kubetest"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// kubeNamespace makes a namespace of the test's own on the cluster, held to
// the restricted Pod Security Standard, and deletes it at the end.
func kubeNamespace(t *testing.T) string {
	t.Helper()
	ns := "codebridge-e2e-" + strings.ToLower(rand.Text()[:8])
	kubectl(t, "create", "namespace", ns)
	t.Cleanup(func() { kubectlErr("delete", "namespace", ns, "--wait=false") })
	kubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
	return ns
}

// livePods lists the namespace's pods not being deleted, with their labels
// and annotations as JSON.
func livePods(t testing.TB, ns, selector string) map[string]string {
	t.Helper()
	args := []string{"-n", ns, "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}|{.metadata.deletionTimestamp}|{.metadata.labels} {.metadata.annotations}{"\n"}{end}`}
	if selector != "" {
		args = append(args, "-l", selector)
	}
	pods := map[string]string{}
	for line := range strings.Lines(kubectl(t, args...)) {
		if f := strings.SplitN(strings.TrimSpace(line), "|", 3); len(f) == 3 && f[1] == "" {
			pods[f[0]] = f[2]
		}
	}
	return pods
}

// TestKubernetesReplicasShareSessions: two serve --http replicas on one
// cluster and one state folder. A client's session started on replica a
// continues by handle on replica b (a client without an MCP session, MCP
// 2026-07-28) with its state; back on a through its MCP session, the session
// follows its sandbox. Then a is killed (SIGKILL) in the middle of a run, and
// the session continues from b, state kept. The pod carries the handle only
// as a hash; b's idle expiry ends it, and once b has stopped no pod is left.
func TestKubernetesReplicasShareSessions(t *testing.T) {
	if !kubetest.Enabled() {
		t.Skip("runs against Kubernetes (MCP_BRIDGE_ENGINE=kubernetes, scripts/test.sh's Kubernetes phase)")
	}
	requirePodman(t)
	requireLocalCluster(t)
	ns := kubeNamespace(t)
	state := t.TempDir()
	env := append(bridgeEnv(t, t.TempDir()), "MCP_BRIDGE_STATE_DIR="+state, "MCP_BRIDGE_K8S_NAMESPACE="+ns)
	a := startHTTP(t, append(env, "MCP_BRIDGE_WARM_CONTAINERS=0"))
	b := startHTTP(t, append(env, "MCP_BRIDGE_SESSION_IDLE_TIMEOUT=20"))

	onA := a.goClient(t, a.Token)
	r := runPython(t, onA, map[string]any{"code": "x = 41"})
	h, id := r.Out.Session.Handle, r.Out.Session.ID
	if r.IsError || h == "" {
		t.Fatalf("on a: %s %+v", r.Text, r.Out.Session)
	}
	onB, err := dialHTTP(b.URL, b.Token, nil, "") // sessionless: the handle carries the state
	if err != nil {
		t.Fatal(err)
	}
	defer onB.Close()
	byHandle := func(what, code, want string) {
		t.Helper()
		r := runPython(t, onB, map[string]any{"code": code, "session": h})
		if r.Out.Session != nil && r.Out.Session.Ended == "moved" { // a run as the sandbox changed hands
			r = runPython(t, onB, map[string]any{"code": code, "session": h})
		}
		if r.Out.Stdout != want || r.Out.Session == nil || r.Out.Session.ID != id || r.Out.Session.New {
			t.Fatalf("%s: %q %s %+v, want %q in session %s", what, r.Out.Stdout, r.Text, r.Out.Session, want, id)
		}
	}
	byHandle("on b by handle", "x += 1\nprint(x)", "42\n")

	// The pod names the session by hashes only.
	sum := sha256.Sum256([]byte(h))
	pods := livePods(t, ns, "io.codebridge.handle="+hex.EncodeToString(sum[:])[:32])
	if len(pods) != 1 {
		t.Fatalf("pods labelled with the handle's hash: %v, want the session's one", pods)
	}
	var pod string
	for name, meta := range pods {
		pod = name
		if strings.Contains(meta, h) {
			t.Errorf("pod %s carries the handle itself: %s", name, meta)
		}
	}

	// Back on a, through its own MCP session: the session follows its sandbox.
	r = runPython(t, onA, map[string]any{"code": "x += 1\nprint(x)"})
	if r.Out.Session != nil && r.Out.Session.Ended == "moved" {
		r = runPython(t, onA, map[string]any{"code": "x += 1\nprint(x)"})
	}
	if r.Out.Stdout != "43\n" || r.Out.Session.ID != id {
		t.Fatalf("back on a: %q %s %+v", r.Out.Stdout, r.Text, r.Out.Session)
	}

	// a dies in the middle of a run, once the run has changed x.
	var wg sync.WaitGroup
	wg.Go(func() {
		onA.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "x += 1\nsave_memory('mid-run', x)\nimport time\ntime.sleep(600)"}})
	})
	mem := memory.New(state)
	testenv.Eventually(t, "the run on a to reach its sleep", func() bool {
		_, found, _ := mem.Load("mid-run")
		return found
	})
	a.Cmd.Process.Kill()
	<-a.exited
	a.stopOnce.Do(func() {}) // killed: its cleanup has nothing to stop
	wg.Wait()
	byHandle("on b after a was killed", "print(x)", "44\n")

	// b's idle expiry ends the session and its pod; b's shutdown leaves no pod.
	kubectl(t, "-n", ns, "wait", "--for=delete", "pod/"+pod, "--timeout=3m")
	b.Stop(t)
	if left := livePods(t, ns, ""); len(left) > 0 {
		t.Errorf("pods left after both replicas ended: %v", left)
	}
}

// TestKubernetesWarmPoolReplicas: two serve --http replicas whose sandboxes
// are claimed from an agent-sandbox SandboxWarmPool (MCP_BRIDGE_K8S_WARM_POOL),
// applied as codebridge config --k8s-warm-pool prints it. A session started
// on replica a runs in the pool's warm pod, continues by handle on replica b
// (its claim follows the pod), still runs once a has stopped, and once both
// have stopped no claim is left.
func TestKubernetesWarmPoolReplicas(t *testing.T) {
	if !kubetest.Enabled() {
		t.Skip("runs against Kubernetes (MCP_BRIDGE_ENGINE=kubernetes, scripts/test.sh's Kubernetes phase)")
	}
	requirePodman(t)
	requireLocalCluster(t)
	if out, err := kubectlErr("get", "crd", "sandboxclaims.extensions.agents.x-k8s.io"); err != nil {
		if os.Getenv("CODEBRIDGE_TEST_AGENT_SANDBOX") != "" {
			t.Fatalf("agent-sandbox is missing (CODEBRIDGE_TEST_AGENT_SANDBOX is set): run scripts/agent-sandbox.sh up: %s", out)
		}
		t.Skip("agent-sandbox is missing: run scripts/agent-sandbox.sh up")
	}
	ns := kubeNamespace(t)
	env := append(bridgeEnv(t, t.TempDir()), "MCP_BRIDGE_STATE_DIR="+t.TempDir(), "MCP_BRIDGE_K8S_NAMESPACE="+ns,
		"MCP_BRIDGE_K8S_WARM_POOL=codebridge", "MCP_BRIDGE_WARM_CONTAINERS=0")
	// The template and pool codebridge prints for these settings.
	cmd := exec.Command(binary(t), "config", "--k8s-warm-pool", "1")
	cmd.Env = env
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("codebridge config --k8s-warm-pool: %v", err)
	}
	file := filepath.Join(t.TempDir(), "pool.json")
	os.WriteFile(file, list, 0o600)
	kubectl(t, "-n", ns, "apply", "-f", file)
	kubectl(t, "-n", ns, "wait", "--for=jsonpath={.status.readyReplicas}=1", "sandboxwarmpool/codebridge", "--timeout=3m")
	warm := strings.Fields(kubectl(t, "-n", ns, "get", "pods", "-o", "name"))

	a := startHTTP(t, env)
	b := startHTTP(t, env)
	r := runPython(t, a.goClient(t, a.Token), map[string]any{"code": "import socket\nx = 41\nprint(socket.gethostname())"})
	h, id := r.Out.Session.Handle, r.Out.Session.ID
	if r.IsError || len(warm) != 1 || "pod/"+strings.TrimSpace(r.Out.Stdout) != warm[0] {
		t.Fatalf("on a: %q %s, want the run in the pool's warm pod %v", r.Out.Stdout, r.Text, warm)
	}
	onB, err := dialHTTP(b.URL, b.Token, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer onB.Close()
	r = runPython(t, onB, map[string]any{"code": "x += 1\nprint(x)", "session": h})
	if r.Out.Stdout != "42\n" || r.Out.Session == nil || r.Out.Session.ID != id {
		t.Fatalf("on b by handle: %q %s %+v", r.Out.Stdout, r.Text, r.Out.Session)
	}
	a.Stop(t) // its shutdown leaves the claim b holds
	r = runPython(t, onB, map[string]any{"code": "print(x)", "session": h})
	if r.Out.Stdout != "42\n" || r.Out.Session.ID != id {
		t.Fatalf("on b after a stopped: %q %s %+v", r.Out.Stdout, r.Text, r.Out.Session)
	}
	b.Stop(t)
	if left := kubectl(t, "-n", ns, "get", "sandboxclaims", "-o", "name"); left != "" {
		t.Errorf("claims left after both replicas stopped: %s", left)
	}
}
