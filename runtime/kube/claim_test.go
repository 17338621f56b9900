package kube

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// requireAgentSandbox skips t unless the cluster serves agent-sandbox's
// API and runs its controller (scripts/agent-sandbox.sh up), or fails it
// when CODEBRIDGE_TEST_AGENT_SANDBOX says the run should have it.
func requireAgentSandbox(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := c.api().Do(ctx, requestTimeout, http.MethodGet, claimsAPI, nil, nil, nil)
	if err == nil {
		return
	}
	const what, fix = "agent-sandbox on the cluster", "run scripts/agent-sandbox.sh up"
	if os.Getenv("CODEBRIDGE_TEST_AGENT_SANDBOX") != "" {
		t.Fatalf("%s is missing (CODEBRIDGE_TEST_AGENT_SANDBOX is set): %s: %v", what, fix, err)
	}
	t.Skipf("%s is missing: %s (%v)", what, fix, err)
}

// TestKubernetesWarmPoolClaim: with Options.WarmPool, the engine's sandboxes
// are claimed from an agent-sandbox SandboxWarmPool of the engine's own
// Template: the claimed pod is the pool's warm one, runs codebridge's
// interpreter served in the pod, is continued from a second engine (the
// claim follows), outlives the first engine's shutdown, and once no replica
// uses it ends by its start frame's wait limit, after which a sweep deletes
// its claim and so the pod.
func TestKubernetesWarmPoolClaim(t *testing.T) {
	cfg := requireCluster(t)
	c := NewClient(cfg)
	defer c.Close()
	requireAgentSandbox(t, c)

	// No wait limit: a pool's interpreter waits for its claim however long.
	spec := confine.Spec{Image: testenv.MinimalImage(), Command: python.Command(), Channel: python.ChannelEnv}
	name := "codebridge-test-" + randomHex(4)
	opts := Options{Config: cfg, Namespace: os.Getenv("MCP_BRIDGE_K8S_NAMESPACE"), Spec: spec, Image: spec.Image, PullPolicy: "Never", WarmPool: name,
		Seccomp: os.Getenv("MCP_BRIDGE_K8S_SECCOMP_PROFILE"), Serve: &Serve{Env: python.ServeEnv, Relay: python.RelayCommand()}}
	e := NewEngine(opts)
	t.Cleanup(func() { e.Close(context.Background()) })
	ctx := t.Context()
	_, ns, err := e.connected(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := e.Template(name)
	if err != nil {
		t.Fatal(err)
	}
	ext := claimsAPI + "/namespaces/" + url.PathEscape(ns)
	if err := c.api().Do(ctx, requestTimeout, http.MethodPost, ext+"/sandboxtemplates", nil, tmpl, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.api().Do(context.Background(), requestTimeout, http.MethodDelete, ext+"/sandboxwarmpools/"+name, nil, nil, nil)
		c.api().Do(context.Background(), requestTimeout, http.MethodDelete, ext+"/sandboxtemplates/"+name, nil, nil, nil)
	})
	pool := map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicas": 1, "sandboxTemplateRef": map[string]any{"name": name}},
	}
	if err := c.api().Do(ctx, requestTimeout, http.MethodPost, ext+"/sandboxwarmpools", nil, pool, nil); err != nil {
		t.Fatal(err)
	}
	type poolStatus struct {
		Status struct {
			ReadyReplicas int `json:"readyReplicas"`
		} `json:"status"`
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := waitObject(wctx, c, ext+"/sandboxwarmpools", "warm pool", name, errClaimGone, func(p *poolStatus) (bool, error) {
		return p.Status.ReadyReplicas == 1, nil
	}); err != nil {
		t.Fatal(err)
	}

	// The controller's policy for the template's pods denies all traffic.
	type policy struct {
		Spec struct {
			PolicyTypes []string `json:"policyTypes"`
			Ingress     []any    `json:"ingress"`
			Egress      []any    `json:"egress"`
		} `json:"spec"`
	}
	// List it, or watch for it from the list's version.
	npPath, npName := "/apis/networking.k8s.io/v1/namespaces/"+url.PathEscape(ns)+"/networkpolicies", name+"-network-policy"
	var nps struct {
		Metadata objectMeta `json:"metadata"`
		Items    []policy   `json:"items"`
	}
	if err := c.api().Do(ctx, requestTimeout, http.MethodGet, npPath, url.Values{"fieldSelector": {"metadata.name=" + npName}}, nil, &nps); err != nil {
		t.Fatal(err)
	}
	np := &policy{}
	if len(nps.Items) == 1 {
		np = &nps.Items[0]
	} else if np, err = watchObject(wctx, c, npPath, "network policy", npName, nps.Metadata.ResourceVersion, errClaimGone, func(*policy) (bool, error) { return true, nil }); err != nil || np == nil {
		t.Fatalf("the template's network policy: %v", err)
	}
	if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 {
		t.Errorf("the template's network policy: %+v, want both directions with no rule", np.Spec)
	}

	start := time.Now()
	ct, err := e.Start(ctx, sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	b := ct.(*Container)
	t.Logf("claimed %s (pod %s) in %v", b.claim, b.ID(), time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(b.ID(), name+"-") {
		t.Errorf("claimed pod %s, want the pool's warm one (%s-...)", b.ID(), name)
	}
	// The start frame's wait limit ends a session nobody continues (the
	// pool's pod has none in its environment); long enough for the moves
	// below.
	it := python.Start(b.Stream(), protocol.Init{WaitLimit: 10}, python.Limits{})
	res, err := it.Run(ctx, python.Program{Code: "import codebridge_runner\nx = 41\nprint(codebridge_runner.STREAM)"}, nil, time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "socket\n" {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	pods, err := e.find(ctx, LabelClaim+"="+b.claim)
	if err != nil || len(pods) != 1 || pods[0].Name != b.ID() || pods[0].Labels[LabelReplica] != e.replica {
		t.Fatalf("the claimed pod by its claim's label: %+v, %v", pods, err)
	}
	it.Close()

	// Another replica takes it, as a call with the session's handle does.
	second := NewEngine(opts)
	t.Cleanup(func() { second.Close(context.Background()) })
	if err := second.relabel(ctx, b.ID(), map[string]string{LabelReplica: second.replica}, nil); err != nil {
		t.Fatal(err)
	}
	var claimed claimObject
	if err := c.api().Do(ctx, requestTimeout, http.MethodGet, claimsPath(ns)+"/"+b.claim, nil, nil, &claimed); err != nil || claimed.Metadata.Labels[LabelReplica] != second.replica {
		t.Errorf("the claim after its pod moved: labels %v, %v; want the second replica's", claimed.Metadata.Labels, err)
	}
	r, runs, err := second.resume(ctx, b.ID())
	if err != nil || runs != 1 {
		t.Fatalf("resuming from a second engine: %d runs, %v", runs, err)
	}
	it = python.Resume(r.Stream(), runs, python.Limits{})
	res, err = it.Run(ctx, python.Program{Code: "x += 1\nprint(x)"}, nil, time.Minute)
	if err != nil || res.Error != nil || res.Stdout != "42\n" {
		t.Fatalf("run from the second engine: %+v, %v", res, err)
	}
	it.Close()

	// The first replica's shutdown leaves the claim the second holds.
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.api().Do(ctx, requestTimeout, http.MethodGet, claimsPath(ns)+"/"+b.claim, nil, nil, nil); err != nil {
		t.Fatalf("the claim after the first replica's shutdown: %v", err)
	}
	// The second replica dies too: the interpreter ends by its wait limit,
	// and a sweep deletes the ended pod's claim, and so the pod.
	if r.claim != b.claim {
		t.Errorf("the resumed pod's claim is %q, want %q", r.claim, b.claim)
	}
	r.closeStream()
	if _, err := waitPod(wctx, c, ns, b.ID(), ended); err != nil {
		t.Fatal(err)
	}
	if n, err := second.Sweep(ctx, confine.Self(), 0); err != nil || n < 1 {
		t.Fatalf("the sweep deleted %d, %v; want at least the ended pod's claim", n, err)
	}
	if _, err := waitPod(wctx, c, ns, b.ID(), func(*Pod) (bool, error) { return false, nil }); !errors.Is(err, errPodGone) {
		t.Fatalf("the claimed pod after the sweep: %v", err)
	}
	if err := c.api().Do(ctx, requestTimeout, http.MethodGet, claimsPath(ns)+"/"+b.claim, nil, nil, nil); !IsNotFound(err) {
		t.Errorf("the claim after the sweep: %v, want not found", err)
	}
}
