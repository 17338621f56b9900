package main

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// The hostNetwork ports of configs/kubernetes/local's two replicas.
var localReplicaPorts = []int{18680, 18681}

// kubectl runs scripts/kube.sh's kubectl with args and returns its output;
// a failure fails t.
func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := kubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectlErr(args ...string) (string, error) {
	out, err := exec.Command("bash", append([]string{"../../scripts/kube.sh", "kubectl"}, args...)...).CombinedOutput()
	return string(out), err
}

// requireLocalCluster skips t unless the tests run against Kubernetes
// (MCP_BRIDGE_ENGINE=kubernetes, as scripts/test.sh's Kubernetes phase sets),
// and then needs scripts/kube.sh's cluster on this machine: the local overlay
// runs its replicas on this machine's loopback.
func requireLocalCluster(t testing.TB) {
	t.Helper()
	if os.Getenv("MCP_BRIDGE_ENGINE") != "kubernetes" {
		t.Skip("runs in the Kubernetes phase (MCP_BRIDGE_ENGINE=kubernetes)")
	}
	if out, err := exec.Command("bash", "../../scripts/kube.sh", "status").CombinedOutput(); err != nil {
		testenv.Missing(t, "scripts/kube.sh's cluster", "run scripts/kube.sh up ("+strings.TrimSpace(string(out))+")")
	}
}

// localDeployment is configs/kubernetes/local applied in a namespace of the
// test's own, with its state in a folder of the test's own.
type localDeployment struct {
	NS, Token, State string
}

// deployLocal builds codebridge's image from this checkout, applies
// configs/kubernetes/local in a new namespace and waits for both replicas to
// be ready. Cleanup deletes the replicas, checks that they left no sandbox
// pod, and deletes the namespace.
func deployLocal(t *testing.T) *localDeployment {
	t.Helper()
	requireLocalCluster(t)
	for _, p := range localReplicaPorts {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d of configs/kubernetes/local is taken (another deployment of it?): %v", p, err)
		}
		l.Close()
	}
	if out, err := exec.Command("bash", "../../scripts/kube.sh", "image", "localhost/codebridge:e2e").CombinedOutput(); err != nil {
		t.Fatalf("scripts/kube.sh image: %v\n%s", err, out)
	}
	d := &localDeployment{NS: "codebridge-e2e-" + strings.ToLower(rand.Text()[:8]), Token: rand.Text() + rand.Text()}
	d.State = t.TempDir()
	// The replicas run as 65532 and write there: a folder of their own.
	d.State = filepath.Join(d.State, "state")
	if err := os.Mkdir(d.State, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d.State, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	overlay, err := filepath.Abs("../../configs/kubernetes/local")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, overlay) // kustomize takes no absolute paths
	if err != nil {
		t.Fatal(err)
	}
	kust := fmt.Sprintf(`namespace: %s
resources: [%s]
images: [{name: localhost/codebridge, newTag: e2e}]
secretGenerator:
  - name: codebridge-http-token
    literals: [token=%s]
    options: {disableNameSuffixHash: true}
patches:
  - target: {kind: Deployment}
    patch: |
      - op: replace
        path: /spec/template/spec/volumes/0/hostPath/path
        value: %s
`, d.NS, rel, d.Token, d.State)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.delete(t) })
	kubectl(t, "apply", "-k", dir)
	for _, r := range []string{"a", "b"} {
		kubectl(t, "-n", d.NS, "rollout", "status", "deploy/codebridge-"+r, "--timeout=3m")
	}
	return d
}

// URL is the MCP endpoint of replica i.
func (d *localDeployment) URL(i int) string {
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", localReplicaPorts[i])
}

// sandboxPods lists the namespace's sandbox pods that are not being deleted.
func (d *localDeployment) sandboxPods(t testing.TB) []string {
	out := kubectl(t, "-n", d.NS, "get", "pods", "-l", "io.codebridge.managed=true",
		"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var pods []string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) == 1 {
			pods = append(pods, f[0])
		}
	}
	return pods
}

// delete stops the replicas (SIGTERM: each deletes its pods), checks that no
// sandbox pod is left, and deletes the namespace.
func (d *localDeployment) delete(t *testing.T) {
	if t.Failed() {
		for _, r := range []string{"a", "b"} {
			out, _ := kubectlErr("-n", d.NS, "logs", "deploy/codebridge-"+r, "--tail=60")
			t.Logf("replica %s's log:\n%s", r, out)
		}
	}
	if out, err := kubectlErr("-n", d.NS, "delete", "deployment", "--all", "--wait=true", "--timeout=2m"); err != nil {
		t.Errorf("deleting the replicas: %v\n%s", err, out)
	}
	if out, err := kubectlErr("-n", d.NS, "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name=codebridge", "--timeout=2m"); err != nil {
		t.Errorf("waiting for the replicas to end: %v\n%s", err, out)
	}
	if out, err := kubectlErr("-n", d.NS, "wait", "--for=delete", "pod", "-l", "io.codebridge.managed=true", "--timeout=1m"); err != nil {
		t.Errorf("sandbox pods left a minute after the replicas ended: %v\n%s", err, out)
	}
	if out, err := kubectlErr("delete", "namespace", d.NS, "--wait=true", "--timeout=3m"); err != nil {
		t.Errorf("deleting the namespace: %v\n%s", err, out)
	}
}

// TestKubernetesDeployment: configs/kubernetes applied to scripts/kube.sh's
// cluster. The default overlay is admitted under the restricted Pod Security
// Standard without a warning; the local one's two replicas become ready, a
// real MCP client runs code through each, and what one stores the other reads
// (their shared state folder); once they are deleted no sandbox pod is left.
func TestKubernetesDeployment(t *testing.T) {
	requireLocalCluster(t)
	t.Run("restricted", func(t *testing.T) {
		dir := t.TempDir()
		base, _ := filepath.Abs("../../configs/kubernetes/default")
		rel, _ := filepath.Rel(dir, base)
		ns := "codebridge-e2e-restricted-" + strings.ToLower(rand.Text()[:6])
		os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("namespace: "+ns+"\nresources: ["+rel+"]\n"), 0o600)
		t.Cleanup(func() { kubectlErr("delete", "namespace", ns, "--wait=false") })
		out := kubectl(t, "apply", "-k", dir)
		if strings.Contains(out, "PodSecurity") {
			t.Errorf("the default overlay under the restricted standard:\n%s", out)
		}
		if labels := kubectl(t, "get", "namespace", ns, "-o", "jsonpath={.metadata.labels}"); !strings.Contains(labels, `"pod-security.kubernetes.io/enforce":"restricted"`) {
			t.Fatalf("namespace labels %s", labels)
		}
		// Its pods wait for a ReadWriteMany volume this cluster cannot
		// provide; what matters is that the API server admitted them.
		testenv.Eventually(t, "the replicas' pods to be admitted", func() bool {
			return len(strings.Fields(kubectl(t, "-n", ns, "get", "pods", "-o", "name"))) == 2
		})
		if ev := kubectl(t, "-n", ns, "get", "events", "--field-selector", "reason=FailedCreate", "-o", "name"); ev != "" {
			t.Errorf("pods refused: %s", kubectl(t, "-n", ns, "get", "events"))
		}
	})

	d := deployLocal(t)
	a, err := dialHTTP(d.URL(0), d.Token, nil, withSession)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := dialHTTP(d.URL(1), d.Token, nil, withSession)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if out := mustRun(t, a, `import socket; save_memory("from-a", socket.gethostname()); print(sum(range(10)))`); out != "45\n" {
		t.Errorf("replica a: %q", out)
	}
	if out := mustRun(t, b, `print(load_memory("from-a").startswith("codebridge-"))`); out != "True\n" {
		t.Errorf("replica b reads what a stored: %q", out)
	}
	if pods := d.sandboxPods(t); len(pods) < 2 {
		t.Errorf("sandbox pods %v, want the two sessions' at least", pods)
	}
}
