package kube

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginetest"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestConformance runs the engines' conformance suite against the cluster.
func TestConformance(t *testing.T) { enginetest.Run(t, driver(t)) }

// BenchmarkStart: a sandbox pod started until its Python answered print(1),
// through the relay.
//
//	go test ./runtime/kube -run '^$' -bench Start -benchtime 20x
func BenchmarkStart(b *testing.B) { enginetest.BenchStart(b, driver(b)) }

// driver is the suite's view of this driver, on the test cluster. A pod
// counts as listed while it runs: one that has ended is gone for the suite
// (the sweep deletes its object later).
func driver(t testing.TB) enginetest.Driver {
	e := newTestEngine(t, confine.Spec{}, true) // for StartOwned, List, Sweep, Remove
	return enginetest.Driver{
		Name:  "Kubernetes",
		Image: testenv.MinimalImage(),
		Init:  "pause", // the pod's pause container, its processes shared
		New: func(t testing.TB, spec confine.Spec) enginetest.Start {
			e := newTestEngine(t, spec, true)
			return func(ctx context.Context) (sandbox.Container, error) {
				b, err := e.Start(ctx, sandbox.Wait{})
				if err != nil {
					return nil, err // not a typed nil in the interface
				}
				return b, nil
			}
		},
		StartOwned: func(ctx context.Context, spec confine.Spec, owner map[string]string) (string, error) {
			b, err := e.startOwned(ctx, spec, owner)
			if err != nil {
				return "", err
			}
			return b.ID(), nil
		},
		List: func(ctx context.Context) (map[string]map[string]string, error) {
			pods, err := e.List(ctx)
			found := map[string]map[string]string{}
			for _, p := range pods {
				if !p.Deleted && p.Ended.IsZero() {
					found[p.Name] = p.Labels
				}
			}
			return found, err
		},
		Sweep:  func(ctx context.Context, self confine.Owner) (int, error) { return e.Sweep(ctx, self, 0) },
		Remove: func(ctx context.Context, id string) error { return e.RemovePod(ctx, id) },
		Differs: map[string]string{
			"exec_tmp":              "an emptyDir takes no mount options: /tmp and /work are not noexec",
			"exec_work":             "an emptyDir takes no mount options: /tmp and /work are not noexec",
			"pids_max":              "a pod has no pids limit of its own: the kubelet's podPidsLimit caps each pod of the node (scripts/kube.sh sets 128)",
			"forked":                "the pids limit is the node's per pod (128 on scripts/kube.sh's cluster), not the spec's",
			"GoneWithStream/socket": "the interpreter serves its stream in its pod and outlives it, so that another replica can continue the session; Remove, the engine's Close and its wait limit end it (docs/kubernetes.md#the-stream)",
		},
	}
}

// childEngine is the engine of the suite's owner test's child
// ([enginetest.Child]): a replica that warms a pod over attach.
func childEngine(spec confine.Spec, _ string) enginetest.Start {
	cfg, err := LoadConfig(os.Getenv)
	e := NewEngine(Options{Config: cfg, Image: spec.Image, PullPolicy: "Never", Spec: spec})
	return func(ctx context.Context) (sandbox.Container, error) {
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		b, err := e.Start(ctx, sandbox.Wait{})
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}
