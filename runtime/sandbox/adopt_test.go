//go:build linux

package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/python"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// fakeCluster stands in for Kubernetes: its sandboxes ("pods") are local
// python3 processes running the real bootstrap in serve mode, each serving
// its stream on an abstract unix socket, one connection at a time, as a
// pod's interpreter does; every replica (a [fakeReplica] engine under its
// own Manager) reaches every pod.
type fakeCluster struct {
	t      testing.TB
	python string

	mu   sync.Mutex
	pods map[string]*fakePod
	n    int
}

type fakePod struct {
	name, socket string
	cmd          *exec.Cmd
	done         chan struct{}
	// Guarded by the cluster's mu, as labels on a pod.
	replica string
	holder  *fakeBox // the connection of the replica that last started or adopted it
	ref     HandleRef
	id      string
}

func newFakeCluster(t testing.TB) *fakeCluster {
	c := &fakeCluster{t: t, python: testenv.Python(t), pods: map[string]*fakePod{}}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range c.pods {
			t.Errorf("pod %s of replica %s left running", p.name, p.replica)
			p.cmd.Process.Kill()
		}
	})
	return c
}

// fakeReplica is one replica's view of the cluster: an [Adopter] engine.
type fakeReplica struct {
	c  *fakeCluster
	id string
}

func (r *fakeReplica) Start(ctx context.Context, _ Wait) (Container, error) {
	c := r.c
	c.mu.Lock()
	c.n++
	p := &fakePod{name: fmt.Sprintf("pod%d", c.n), replica: r.id, done: make(chan struct{})}
	c.mu.Unlock()
	p.socket = fmt.Sprintf("codebridge-adopt-test-%d-%s", os.Getpid(), p.name)
	p.cmd = exec.Command(c.python, python.Command()[1:]...)
	p.cmd.Env = append(testenv.PythonEnv, python.ServeEnv+"="+p.socket, python.WaitLimitEnv+"=300")
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	c.mu.Lock()
	c.pods[p.name] = p
	c.mu.Unlock()
	conn, _, err := r.dial(ctx, p)
	if err != nil {
		r.remove(p)
		return nil, err
	}
	return r.hold(p, conn), nil
}

// hold records a new connection to p as the one that holds it.
func (r *fakeReplica) hold(p *fakePod, conn net.Conn) *fakeBox {
	b := &fakeBox{r: r, p: p, conn: conn, started: time.Now()}
	r.c.mu.Lock()
	p.replica, p.holder = r.id, b
	r.c.mu.Unlock()
	return b
}

// dial connects to p's socket as the relay does and reads its greeting.
func (r *fakeReplica) dial(ctx context.Context, p *fakePod) (net.Conn, int, error) {
	var conn net.Conn
	for { // the process listens once it has started
		var err error
		if conn, err = net.Dial("unix", "@"+p.socket); err == nil {
			break
		}
		select {
		case <-p.done:
			return nil, 0, errors.New("the pod's process ended")
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	var hello [5]byte
	if _, err := io.ReadFull(conn, hello[:1]); err != nil {
		conn.Close()
		return nil, 0, err
	}
	if hello[0] != confine.ServeResumed {
		return conn, 0, nil
	}
	if _, err := io.ReadFull(conn, hello[1:]); err != nil {
		conn.Close()
		return nil, 0, err
	}
	return conn, int(binary.BigEndian.Uint32(hello[1:])), nil
}

func (r *fakeReplica) remove(p *fakePod) {
	p.cmd.Process.Kill()
	<-p.done
	r.c.mu.Lock()
	delete(r.c.pods, p.name)
	r.c.mu.Unlock()
}

func (r *fakeReplica) Mark(_ context.Context, ct Container, ref HandleRef, id string) error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	p := ct.(*fakeBox).p
	p.ref, p.id = ref, id
	return nil
}

func (r *fakeReplica) Adopt(ctx context.Context, ref HandleRef) (Container, string, int, error) {
	r.c.mu.Lock()
	var p *fakePod
	for _, o := range r.c.pods {
		if o.ref == ref {
			p = o
		}
	}
	r.c.mu.Unlock()
	if p == nil {
		return nil, "", 0, ErrUnknownHandle
	}
	conn, runs, err := r.dial(ctx, p)
	if err != nil {
		return nil, "", 0, err
	}
	return r.hold(p, conn), p.id, runs, nil
}

func (r *fakeReplica) Lost(_ context.Context, ct Container) bool {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	b := ct.(*fakeBox)
	return b.p.holder != b
}

// fakeBox is a replica's connection to a pod.
type fakeBox struct {
	r       *fakeReplica
	p       *fakePod
	conn    net.Conn
	started time.Time
	once    sync.Once
}

func (b *fakeBox) ID() string                 { return b.p.name }
func (b *fakeBox) Started() time.Time         { return b.started }
func (b *fakeBox) Stream() io.ReadWriteCloser { return b.conn }
func (b *fakeBox) Done() <-chan struct{}      { return b.p.done }
func (b *fakeBox) Stderr() string             { return "" }

func (b *fakeBox) Exit(ctx context.Context) (int, bool, error) {
	select {
	case <-b.p.done:
		return b.p.cmd.ProcessState.ExitCode(), false, nil
	case <-ctx.Done():
		return -1, false, ctx.Err()
	}
}

// Remove ends the pod, unless another replica has taken it: then it only
// lets go of its connection.
func (b *fakeBox) Remove(context.Context) error {
	b.once.Do(func() {
		b.conn.Close()
		if !b.r.Lost(context.Background(), b) { // as a pod's labels say who holds it
			b.r.remove(b.p)
		}
	})
	return nil
}

// TestHandleFromAnotherReplica: two replicas (two Managers) on one cluster
// whose sandboxes both reach. A session started on replica a continues by
// handle on replica b with its state; only for its owner; back on a, the
// session follows its sandbox instead of starting afresh; with a gone
// without a word (never closed), b continues it again. Nothing is left once
// both are closed.
func TestHandleFromAnotherReplica(t *testing.T) {
	c := newFakeCluster(t)
	a := New(&fakeReplica{c: c, id: "a"}, Options{Sessions: true, Warm: 1})
	b := New(&fakeReplica{c: c, id: "b"}, Options{Sessions: true})
	defer b.Close(context.Background())
	defer a.Close(context.Background())

	r1 := runBy(t, a, "alice", "mcp-a", "", "x = 41")
	h := r1.Session.Handle
	r2 := runBy(t, b, "alice", "", h, "x += 1\nprint(x)")
	if r2.Stdout != "42\n" || r2.Session.ID != r1.Session.ID || r2.Session.Run != 2 || r2.Session.New || r2.Session.Handle != h {
		t.Fatalf("on replica b by handle: %q %+v %+v", r2.Stdout, r2.Error, r2.Session)
	}
	if r := runBy(t, b, "mallory", "", h, "print(x)"); !errors.Is(r.Cause, ErrUnknownHandle) || r.Stdout != "" {
		t.Errorf("another owner on replica b: %q %+v", r.Stdout, r.Error)
	}

	// Back on a, through its MCP session's key: a lost the stream to b, and
	// takes the sandbox back. A run that started as the stream went may be
	// told so (ReasonMoved) and must then be run again.
	r3 := runBy(t, a, "alice", "mcp-a", "", "x += 1\nprint(x)")
	if r3.Session.Ended == ReasonMoved {
		r3 = runBy(t, a, "alice", "mcp-a", "", "x += 1\nprint(x)")
	}
	if r3.Stdout != "43\n" || r3.Session.ID != r1.Session.ID || r3.Session.New {
		t.Fatalf("back on replica a: %q %+v %+v", r3.Stdout, r3.Error, r3.Session)
	}

	// Replica a vanishes without closing anything; b carries on by handle.
	r4 := runBy(t, b, "alice", "", h, "x += 1\nprint(x)")
	if r4.Session.Ended == ReasonMoved {
		r4 = runBy(t, b, "alice", "", h, "x += 1\nprint(x)")
	}
	if r4.Stdout != "44\n" || r4.Session.ID != r1.Session.ID {
		t.Fatalf("on replica b after a: %q %+v %+v", r4.Stdout, r4.Error, r4.Session)
	}
	// a's Close leaves b's sandbox alone; b's removes it.
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := runBy(t, b, "alice", "", h, "print(x)"); r.Stdout != "44\n" {
		t.Errorf("on replica b after a closed: %q %+v %+v", r.Stdout, r.Error, r.Session)
	}
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
