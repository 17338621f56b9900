package setup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/codebridge-mcp/codebridge/configs"
)

// writeContext writes the registry build's context into dir.
func writeContext(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "Containerfile"), configs.Containerfile, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sandbox-image.sh"), configs.SandboxImageScript, 0o755)
}

// buildDebian builds the image with no registry: debootstrap a minimal
// bookworm with python3, run the embedded sandbox-image.sh in it, check that
// python3 works there as nobody, then podman import the tree. It needs root
// (debootstrap and chroot) and debootstrap.
func (s *setup) buildDebian(ctx context.Context, variant string) error {
	if os.Geteuid() != 0 {
		return errors.New("building the image from Debian packages needs root (debootstrap and chroot): run sudo codebridge setup, or codebridge setup --from registry where a container registry is reachable")
	}
	if err := s.packages(ctx, "debootstrap"); err != nil {
		return err
	}
	mirror := s.Mirror
	if mirror == "" {
		mirror = aptMirror("/etc/apt/sources.list", "/etc/apt/sources.list.d")
	}
	root, err := os.MkdirTemp("", "codebridge-rootfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	// It becomes the image's /, which MkdirTemp made private to root.
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	logFile := root + ".log"
	defer os.Remove(logFile)

	s.logf("building %s (%s variant) from Debian packages, no registry needed", s.Image, variant)
	s.logf("debootstrap bookworm from %s (about 40 s on an idle machine)", mirror)
	if err := s.quiet(ctx, logFile, "debootstrap", "--variant=minbase", "--include=python3", "bookworm", root, mirror); err != nil {
		return err
	}
	s.logf("running sandbox-image.sh %s in it (data: a few minutes)", variant)
	script := filepath.Join(root, "tmp", "sandbox-image.sh")
	if err := os.WriteFile(script, configs.SandboxImageScript, 0o755); err != nil {
		return err
	}
	if err := s.quiet(ctx, logFile, "chroot", root, "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "bash", "/tmp/sandbox-image.sh", variant); err != nil {
		return err
	}
	// Forget the build host's resolver and name, which debootstrap copied.
	if err := errors.Join(os.Remove(script),
		os.WriteFile(filepath.Join(root, "etc", "resolv.conf"), nil, 0o644),
		os.WriteFile(filepath.Join(root, "etc", "hostname"), []byte("sandbox\n"), 0o644)); err != nil {
		return err
	}
	if err := s.smoke(ctx, root, variant); err != nil {
		return err
	}

	s.logf("importing it as %s", s.Image)
	args := []string{"import"}
	if s.Engine == EnginePodman {
		args = append(args, "--quiet")
	}
	for _, c := range imageChanges(variant) {
		args = append(args, "--change", c)
	}
	args = append(args, "-", s.Image)
	tar := exec.CommandContext(ctx, "tar", "-C", root, "-c", ".")
	pipe, err := tar.StdoutPipe()
	if err != nil {
		return err
	}
	var tarErr bytes.Buffer
	tar.Stderr = &tarErr
	if err := tar.Start(); err != nil {
		return err
	}
	importErr := s.run(ctx, pipe, args...)
	if err := tar.Wait(); err != nil {
		return fmt.Errorf("tar of the image tree: %v: %s", err, tarErr.String())
	}
	if importErr != nil {
		return importErr
	}
	size, _ := s.output(ctx, "image", "inspect", "--format", "{{.Size}}", s.Image)
	s.logf("built %s (%s variant, %s bytes)", s.Image, variant, size)
	return nil
}

// imageChanges are the Containerfile instructions podman import applies: what
// configs/Containerfile sets, but the user, which codebridge sets per container.
func imageChanges(variant string) []string {
	c := []string{
		`CMD ["python3"]`, "WORKDIR /work", "ENV PYTHONDONTWRITEBYTECODE=1",
		"LABEL io.codebridge.sandbox=1", "LABEL io.codebridge.sandbox.variant=" + variant,
		"LABEL " + configs.InputsLabel + "=" + configs.Inputs(variant),
	}
	if variant == "data" {
		c = append(c, "ENV MPLBACKEND=Agg", "ENV MPLCONFIGDIR=/tmp/matplotlib")
	}
	return c
}

// smokeCode proves an image tree works before it is imported: the data
// variant imports its libraries and draws a PNG through matplotlib's Agg.
var smokeCode = map[string]string{
	"minimal": `print("python", __import__("sys").version.split()[0])`,
	"data": `
import os, tempfile
import numpy, pandas, scipy.stats, scipy.optimize, scipy.signal, sklearn.linear_model, sklearn.ensemble
import PIL.Image, matplotlib
import matplotlib.pyplot as plt
assert matplotlib.get_backend().lower() == "agg", matplotlib.get_backend()
fig, ax = plt.subplots(figsize=(2, 2))
ax.plot(pandas.Series(numpy.arange(5)).cumsum())
path = os.path.join(tempfile.mkdtemp(), "smoke.png")
fig.savefig(path)
assert PIL.Image.open(path).size == (200, 200)
print("numpy", numpy.__version__, "pandas", pandas.__version__, "matplotlib", matplotlib.__version__)`,
}

// smoke runs the variant's smoke test in the tree at root as nobody.
func (s *setup) smoke(ctx context.Context, root, variant string) error {
	tmp, err := os.MkdirTemp(filepath.Join(root, "tmp"), "smoke.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o1777); err != nil {
		return err
	}
	in := strings.TrimPrefix(tmp, root)
	cmd := exec.CommandContext(ctx, "chroot", "--userspec=65534:65534", root, "/usr/bin/env", "-i", "PATH=/usr/bin:/bin",
		"HOME="+in, "TMPDIR="+in, "MPLCONFIGDIR="+in+"/matplotlib", "MPLBACKEND=Agg", "python3", "-I", "-c", smokeCode[variant])
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("the %s image's python3 fails its smoke test: %v\n%s", variant, err, out)
	}
	s.logf("smoke test: %s", strings.TrimSpace(string(out)))
	return nil
}

// quiet runs a long command with its output in logFile, showing the file's
// last lines when it fails.
func (s *setup) quiet(ctx context.Context, logFile, name string, args ...string) error {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s failed (%v); its last lines:\n%s", name, err, lastLines(logFile, 20))
	}
	return nil
}

func lastLines(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// aptMirror is the first Debian mirror in this machine's apt sources (one-line
// "deb URL suite ..." lists and deb822 "URIs:" files), leaving out security
// mirrors; deb.debian.org when there is none.
func aptMirror(list, dir string) string {
	files := []string{list}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		m := mirrorIn(f)
		f.Close()
		if m != "" {
			return m
		}
	}
	return "http://deb.debian.org/debian"
}

func mirrorIn(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		var uri string
		switch {
		case len(fields) >= 2 && fields[0] == "URIs:":
			uri = fields[1]
		case len(fields) >= 3 && fields[0] == "deb":
			uri = fields[1]
			if strings.HasPrefix(uri, "[") { // deb [arch=amd64 signed-by=...] URL
				for i, f := range fields[1:] {
					if strings.HasSuffix(f, "]") && i+2 < len(fields) {
						uri = fields[i+2]
						break
					}
				}
			}
		}
		if strings.Contains(uri, "://") && !strings.Contains(uri, "security") {
			return uri
		}
	}
	return ""
}
