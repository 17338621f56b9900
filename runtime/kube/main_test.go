package kube

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginetest"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// requireCluster returns the configuration of the cluster KUBECONFIG names,
// or skips t (fails it in CI) when there is none that answers. Outside
// scripts/test.sh's Kubernetes phase (MCP_BRIDGE_ENGINE=kubernetes), with
// no cluster named, it skips t even in CI: that phase runs these tests.
// scripts/kube.sh up starts one; eval "$(scripts/kube.sh env)" names it.
func requireCluster(t testing.TB) *Config {
	t.Helper()
	const fix = `run scripts/kube.sh up, then eval "$(scripts/kube.sh env)"`
	if os.Getenv("KUBECONFIG") == "" && testenv.Engine() != testenv.EngineKubernetes {
		t.Skip("no Kubernetes cluster named (scripts/test.sh's Kubernetes phase runs these tests against scripts/kube.sh's)")
	}
	if os.Getenv("KUBECONFIG") == "" {
		testenv.Missing(t, "a Kubernetes cluster (KUBECONFIG)", fix)
	}
	cfg, err := LoadConfig(os.Getenv)
	if err != nil {
		testenv.Missing(t, "a Kubernetes cluster", fix+": "+err.Error())
	}
	c := NewClient(cfg)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Version(ctx); err != nil {
		testenv.Missing(t, "a Kubernetes cluster that answers", fix+": "+err.Error())
	}
	return cfg
}

// newTestEngine returns an engine on the test cluster whose pods run spec
// (the minimal sandbox image unless spec names one), served in the pod when
// serve is set; Close deletes its pods when t ends.
func newTestEngine(t testing.TB, spec confine.Spec, serve bool) *Engine {
	t.Helper()
	cfg := requireCluster(t)
	if spec.Image == "" {
		spec.Image = testenv.MinimalImage()
	}
	// scripts/test.sh's Kubernetes phase names codebridge's profile, which
	// scripts/kube.sh puts on the node.
	opts := Options{Config: cfg, Spec: spec, Image: spec.Image, PullPolicy: "Never", Seccomp: os.Getenv("MCP_BRIDGE_K8S_SECCOMP_PROFILE")}
	if serve {
		opts.Serve = &Serve{Env: python.ServeEnv, Relay: python.RelayCommand()}
	}
	e := NewEngine(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e
}

// warmChildEnv makes the test binary act as a replica that warms one
// sandbox pod, prints its name and waits to be killed
// (TestKubernetesWarmPodEndsWithReplica).
const warmChildEnv = "CODEBRIDGE_KUBE_TEST_WARM_CHILD"

func TestMain(m *testing.M) {
	enginetest.Child(childEngine)
	if os.Getenv(warmChildEnv) != "" {
		warmChild()
	}
	os.Exit(m.Run())
}

func warmChild() {
	cfg, err := LoadConfig(os.Getenv)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	e := NewEngine(Options{Config: cfg, Image: os.Getenv(warmChildEnv), PullPolicy: "Never",
		Spec:  confine.Spec{Command: python.Command(), Channel: python.ChannelEnv, Env: map[string]string{python.WaitLimitEnv: "600"}},
		Serve: &Serve{Env: python.ServeEnv, Relay: python.RelayCommand()}})
	b, err := e.Start(context.Background(), sandbox.Wait{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	python.Start(b.Stream(), protocol.Init{}, python.Limits{}) // warm: started, no run yet
	fmt.Println("ready", b.ID())
	select {}
}
