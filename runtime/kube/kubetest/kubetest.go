// Package kubetest finds the Kubernetes cluster integration tests run
// against (scripts/kube.sh's, named by KUBECONFIG) and looks at its sandbox
// pods, for the tests of packages above runtime/kube. Like runtime/testenv,
// it skips on a machine without the cluster and fails with CI=true.
package kubetest

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/kube"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// Fix is how to get the cluster the tests need.
const Fix = `run scripts/kube.sh up, then eval "$(scripts/kube.sh env)"`

// Enabled reports whether the tests run against Kubernetes
// (testenv.Engine), as scripts/test.sh's Kubernetes phase sets.
func Enabled() bool { return testenv.Engine() == testenv.EngineKubernetes }

// Settings are the settings a codebridge under test needs to use the
// cluster besides the engine's name (testenv.Engine): the seccomp profile
// the phase names.
func Settings() []string {
	if p := os.Getenv("MCP_BRIDGE_K8S_SECCOMP_PROFILE"); p != "" {
		return []string{"MCP_BRIDGE_K8S_SECCOMP_PROFILE=" + p}
	}
	return nil
}

// Engine returns an engine on the cluster that only looks (it starts
// nothing), or skips t (fails it in CI) when no cluster answers. One engine
// serves the whole test binary.
func Engine(t testing.TB) *kube.Engine {
	t.Helper()
	if os.Getenv("KUBECONFIG") == "" {
		testenv.Missing(t, "a Kubernetes cluster (KUBECONFIG)", Fix)
	}
	e, err := engine()
	if err != nil {
		testenv.Missing(t, "a Kubernetes cluster that answers", Fix+": "+err.Error())
	}
	return e
}

var engine = sync.OnceValues(func() (*kube.Engine, error) {
	cfg, err := kube.LoadConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	e := kube.NewEngine(kube.Options{Config: cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Ready(ctx, sandbox.Wait{}); err != nil {
		return nil, err
	}
	return e, nil
})

// RequireImage skips t (fails it in CI) when no node holds img.
func RequireImage(t testing.TB, img string) {
	t.Helper()
	ctx, cancel := reqContext()
	defer cancel()
	ok, err := Engine(t).HasImage(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		testenv.Missing(t, "sandbox image "+img+" on the cluster's node", "scripts/kube.sh load "+img)
	}
}

// Pods returns the cluster's codebridge pods not being deleted, with the
// owner each names ([confine.LabelOwner]), by name.
func Pods(t testing.TB) map[string]string {
	t.Helper()
	found := map[string]string{}
	for _, p := range list(t) {
		if !p.Deleted {
			found[p.Name] = p.Labels[confine.LabelOwner]
		}
	}
	return found
}

// PodExists reports whether the pod exists, even while it is deleted.
func PodExists(t testing.TB, name string) bool {
	t.Helper()
	return slices.ContainsFunc(list(t), func(p kube.PodSummary) bool { return p.Name == name })
}

// list returns the cluster's codebridge pods.
func list(t testing.TB) []kube.PodSummary {
	t.Helper()
	ctx, cancel := reqContext()
	defer cancel()
	pods, err := Engine(t).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// reqContext bounds one look at the cluster. It does not derive from the
// test's context, which has ended when a cleanup looks for leftovers.
func reqContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}
