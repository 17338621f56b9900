package podman

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
)

func waitExit(t *testing.T, ct *APIContainer) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	code, err := ct.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return code
}

// TestLargeLine sends a 10 MB line without a newline inside it through
// stdout: no size or line limit anywhere in the attach path.
func TestLargeLine(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	const size = 10 << 20
	code := `
import hashlib, sys
line = bytes((i * 7 + 11) % 251 + 1 for i in range(` + strconv.Itoa(size) + `)).replace(b"\n", b"A")
sys.stdout.buffer.write(line + b"\n")
sys.stdout.buffer.flush()
sys.stderr.write(hashlib.sha256(line).hexdigest())
`
	ct := startTest(t, c, confine.Spec{Image: img, Command: []string{"python3", "-c", code}})
	br := bufio.NewReader(ct.Stdout())
	h := sha256.New()
	n, err := io.Copy(h, readLine{br})
	if err != nil {
		t.Fatal(err)
	}
	if n != size {
		t.Fatalf("line of %d bytes, want %d", n, size)
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Errorf("%d bytes after the line", len(rest))
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), ct.Stderr(); got != want {
		t.Errorf("sha256 of the line %s, sandbox says %s", got, want)
	}
}

// readLine reads up to and excluding the first '\n'.
type readLine struct{ br *bufio.Reader }

func (r readLine) Read(p []byte) (int, error) {
	b, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		n := copy(p, b)
		// ReadSlice returned len(b) bytes but p may be shorter.
		if n < len(b) {
			panic("short buffer")
		}
		return n, nil
	}
	if err != nil {
		return 0, err
	}
	return copy(p, b[:len(b)-1]), io.EOF
}

func TestKillRemove(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	ct, err := c.Start(t.Context(), confine.Spec{Image: img, Command: []string{"python3", "-c", "import time; time.sleep(600)"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ct.Remove(context.WithoutCancel(t.Context())) })
	if err := ct.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, ct); code != 137 {
		t.Errorf("exit code after Kill %d, want 137", code)
	}
	if oom, err := ct.OOMKilled(t.Context()); err != nil || oom {
		t.Errorf("OOMKilled after Kill = %v, %v; want false", oom, err)
	}
	if err := ct.Kill(t.Context()); err != nil {
		t.Errorf("Kill of a stopped container: %v", err)
	}
	if err := ct.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ct.Remove(t.Context()); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if err := c.remove(t.Context(), ct.ID()); err != nil {
		t.Errorf("removing a container that is gone: %v", err)
	}
	list, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.ID == ct.ID() {
			t.Errorf("container %s still listed after Remove: %+v", enginekit.ShortID(ct.ID()), s)
		}
	}
	if _, err := ct.Inspect(t.Context()); !isStatus(err, 404) {
		t.Errorf("Inspect after Remove: %v, want 404", err)
	}
}

func TestStartBadImage(t *testing.T) {
	c := testClient(t)
	before, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Start(t.Context(), confine.Spec{Image: "localhost/codebridge-no-such-image:1", Command: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-image") {
		t.Fatalf("Start with a missing image: %v", err)
	}
	// With init, the runtime starts catatonit, which then fails to run the
	// program: Start succeeds and the container exits at once.
	img := testImage(t, c)
	ct := startTest(t, c, confine.Spec{Image: img, Command: []string{"/no/such/program"}})
	out, err := io.ReadAll(ct.Stdout())
	if len(out) != 0 || err != nil {
		t.Errorf("stdout %q, %v", out, err)
	}
	code := waitExit(t, ct)
	t.Logf("missing program: exit code %d, stderr %q", code, ct.Stderr())
	if code == 0 {
		t.Error("exit code 0 for a missing program")
	}
	if err := ct.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	after, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if countClient(after, c) > countClient(before, c) {
		t.Errorf("%d containers before, %d after failed Starts", countClient(before, c), countClient(after, c))
	}
}

func countClient(list []Summary, c *Client) int {
	n := 0
	for _, s := range list {
		if s.Labels[labelClient] == c.owner[labelClient] {
			n++
		}
	}
	return n
}

// TestNoOutputLost starts containers that write at once and exit: attaching
// before starting must catch every byte. (With Podman 4.3.1, attaching after
// start loses early output, and attaching to a container that has already
// exited hangs.)
func TestNoOutputLost(t *testing.T) {
	c := testClient(t)
	img := testImage(t, c)
	for i := range 5 {
		ct := startTest(t, c, confine.Spec{Image: img, Command: []string{"python3", "-c", "import sys; sys.stdout.write('x%d' % 1); sys.stderr.write('e')"}})
		out, err := io.ReadAll(ct.Stdout())
		if err != nil || string(out) != "x1" {
			t.Errorf("run %d: stdout %q, %v", i, out, err)
		}
		<-ct.Done()
		if ct.Stderr() != "e" {
			t.Errorf("run %d: stderr %q", i, ct.Stderr())
		}
	}
}
