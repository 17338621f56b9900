package podman

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestMinimalImage runs the sandbox in the minimal image (python3 only), which
// users choose with MCP_BRIDGE_IMAGE: the bootstrap, the helper module and a
// run must work without the data image's packages.
func TestMinimalImage(t *testing.T) {
	c := testClient(t)
	img := testenv.MinimalImage()
	ok, err := c.ImageExists(t.Context(), img)
	if err != nil {
		t.Fatalf("checking image %s: %v", img, err)
	}
	if !ok {
		testenv.Missing(t, "image "+img, "run codebridge setup --image "+img)
	}
	e := newTestEngine(t, EngineOptions{Image: img})
	res, err := runOnce(t, e, "import mcp\nfrom mcp import runtime\nprint(1, discovered_servers(), runtime.discovered_servers())")
	if err != nil || res.Error != nil || res.Stdout != "1 () ()\n" {
		t.Fatalf("run in %s: %+v, %v", img, res, err)
	}
}

// TestDataImage checks what the data image promises, under the sandbox's
// real hardening (read-only root, uid 65534, no network): its packages
// import, and matplotlib draws a PNG headless with codebridge's backend (Agg,
// whose show() returns figures with the result) and the image's MPLCONFIGDIR. It runs when the test image is labelled as the data variant.
func TestDataImage(t *testing.T) {
	testenv.RequirePodmanBinary(t)
	img := testImage(t, testClient(t))
	out, err := exec.Command("podman", "image", "inspect", "--format",
		`{{index .Config.Labels "io.codebridge.sandbox.variant"}}`, img).Output()
	if err != nil {
		t.Fatalf("podman image inspect %s: %v", img, err)
	}
	if v := strings.TrimSpace(string(out)); v != "data" {
		t.Skipf("image %s is not the data variant (io.codebridge.sandbox.variant=%q)", img, v)
	}
	e := newTestEngine(t, EngineOptions{Image: img})
	const code = `
import io, os
import numpy, pandas, scipy.stats, sklearn.linear_model, PIL.Image
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(2, 1))
ax.plot(pandas.Series(numpy.arange(4)).cumsum())
fig.savefig("/tmp/plot.png")
buf = io.BytesIO()
fig.savefig(buf, format="png")
plt.close(fig)
print(plt.get_backend(), os.getuid(), PIL.Image.open("/tmp/plot.png").size, buf.getvalue()[:4] == b"\x89PNG")
`
	res, err := runOnce(t, e, code)
	if err != nil || res.Error != nil || res.Stdout != "module://mcp._mpl_backend 65534 (200, 100) True\n" {
		t.Fatalf("run in %s: %+v, %v", img, res, err)
	}
	if res.Stderr != "" {
		t.Errorf("stderr (matplotlib warnings?): %q", res.Stderr)
	}
}
