package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// EngineKubernetes is what [Engine] says in scripts/test.sh's Kubernetes
// phase, whose cluster runtime/kube/kubetest finds (this package's engine
// helpers drive the podman and docker commands only).
const EngineKubernetes = "kubernetes"

// Engine is the container engine the tests run against: "docker" or
// "kubernetes" when $MCP_BRIDGE_ENGINE says so (scripts/test.sh's Docker
// phase sets docker, with DOCKER_HOST naming its private daemon; its
// Kubernetes phase sets kubernetes, with KUBECONFIG naming the cluster),
// else "podman".
func Engine() string {
	switch e := os.Getenv("MCP_BRIDGE_ENGINE"); e {
	case "docker", EngineKubernetes:
		return e
	}
	return "podman"
}

// EngineCLI returns the path of the engine's command (podman or docker), or
// skips/fails t. The docker command talks to the daemon DOCKER_HOST names.
func EngineCLI(t testing.TB) string {
	t.Helper()
	if Engine() == "podman" {
		return RequirePodmanBinary(t)
	}
	p, err := exec.LookPath("docker")
	if err != nil {
		Missing(t, "docker", "run scripts/dockerd.sh start (it installs Debian's docker.io), or install Docker")
	}
	return p
}

// RequireImage skips t (fails it in CI) when the engine does not have img.
func RequireImage(t testing.TB, img string) {
	t.Helper()
	cli := EngineCLI(t)
	if out, err := exec.Command(cli, "image", "inspect", "--format", "{{.Id}}", img).CombinedOutput(); err != nil {
		Missing(t, "sandbox image "+img+" in "+Engine(), "run codebridge setup --engine "+Engine()+" --image "+img+" ("+strings.TrimSpace(string(out))+")")
	}
}

// ContainerExists reports whether the engine has the container.
func ContainerExists(t testing.TB, id string) bool {
	t.Helper()
	return exec.Command(EngineCLI(t), "container", "inspect", "--format", "{{.Id}}", id).Run() == nil
}

// ManagedContainers returns the engine's codebridge containers
// ([confine.LabelManaged]), running or not, with their owner label
// ([confine.LabelOwner]), by short ID.
func ManagedContainers(t testing.TB) map[string]string {
	t.Helper()
	label := `{{index .Labels "` + confine.LabelOwner + `"}}`
	if Engine() == "docker" {
		label = `{{.Label "` + confine.LabelOwner + `"}}`
	}
	out, err := exec.Command(EngineCLI(t), "ps", "-a", "--no-trunc", "--filter", "label="+confine.LabelManaged+"=true",
		"--format", "{{.ID}} "+label).Output()
	if err != nil {
		t.Fatalf("%s ps: %v", Engine(), err)
	}
	found := map[string]string{}
	for line := range strings.Lines(string(out)) {
		id, owner, _ := strings.Cut(strings.TrimSpace(line), " ")
		if id != "" {
			found[id[:min(12, len(id))]] = owner
		}
	}
	return found
}

// OnlyOn skips t when the tests run against another engine than engine:
// a test of one driver's own ways (Podman over ssh, Podman's
// containers.conf), which the other engine's phase has no use for. It is
// not a failure in CI, where each engine has its own phase.
func OnlyOn(t testing.TB, engine string) {
	t.Helper()
	if Engine() != engine {
		t.Skipf("a test of %s; the tests run against %s", engine, Engine())
	}
}
