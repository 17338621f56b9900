package docker

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// TestSSH reaches the test daemon through an ssh:// host, as the docker CLI
// does: an ssh command (here a stand-in that runs its remote command
// locally, where DOCKER_HOST names the test daemon) running 'docker system
// dial-stdio'. Requests, the attach stream (with its half-close) and the
// wait for the exit code all go through that process's stdin and stdout.
func TestSSH(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker command to serve dial-stdio")
	}
	bin := t.TempDir()
	args := filepath.Join(t.TempDir(), "args")
	// ssh [options] -- HOST COMMAND...: record the arguments, run COMMAND.
	script := "#!/bin/sh\necho \"$@\" >>" + args + "\nwhile [ \"$1\" != -- ]; do shift; done\nshift 2\nexec \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(docker, filepath.Join(bin, "docker")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sc, err := Connect(ctx, Options{Host: "ssh://me@example.invalid:2222", Logger: testenv.Logger()})
	if err != nil {
		t.Fatalf("Connect over ssh: %v", err)
	}
	defer sc.Close()
	if sc.SharesFiles() {
		t.Error("a daemon over ssh shares this host's files")
	}
	ct, err := sc.Start(ctx, confine.Spec{Image: img, Command: []string{"python3", "-c", "import sys; print(sys.stdin.read().upper(), end='')"}})
	if err != nil {
		t.Fatalf("Start over ssh: %v", err)
	}
	t.Cleanup(func() { ct.Remove(context.WithoutCancel(ctx)) })
	io.WriteString(ct.Stdin(), "over ssh")
	if err := ct.Stdin().CloseWrite(); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(bufio.NewReader(ct.Stdout()))
	if err != nil || string(out) != "OVER SSH" {
		t.Errorf("stdout %q, %v", out, err)
	}
	if code, err := ct.Wait(ctx); err != nil || code != 0 {
		t.Errorf("exit %d, %v", code, err)
	}
	called, _ := os.ReadFile(args)
	if !strings.Contains(string(called), "-l me -p 2222 -- example.invalid docker system dial-stdio") {
		t.Errorf("ssh called with %q", called)
	}
}
