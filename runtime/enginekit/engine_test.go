package enginekit

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/sandbox"
	"github.com/codebridge-mcp/codebridge/runtime/testenv"
)

// fakeConn is a connection to an engine that starts fake containers.
type fakeConn struct {
	label  string
	shares bool

	mu       sync.Mutex // protects following
	dead     bool       // Ping fails
	gone     string
	launched []confine.Spec
	removed  [][]string // labels asked of RemoveByClient
	closed   bool
	fail     error // what Launch answers
}

func (c *fakeConn) Launch(ctx context.Context, spec confine.Spec, channelDir string) (APIContainer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return nil, c.fail
	}
	c.launched = append(c.launched, spec)
	return &fakeContainer{id: c.label + "-" + string(rune('a'+len(c.launched)-1)), at: confine.NewAttached(nil)}, nil
}

func (c *fakeConn) ImageExists(ctx context.Context, name string) (bool, error) { return true, nil }

func (c *fakeConn) Pull(ctx context.Context, ref string, progress func(string)) error { return nil }

func (c *fakeConn) RemoveStale(ctx context.Context) (int, error) { return 0, nil }

func (c *fakeConn) RemoveByClient(ctx context.Context, labels ...string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removed = append(c.removed, labels)
	return len(labels), nil
}

func (c *fakeConn) Ping(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return errors.New("no answer")
	}
	return nil
}

func (c *fakeConn) Gone() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

func (c *fakeConn) Label() string     { return c.label }
func (c *fakeConn) Endpoint() string  { return "fake://" + c.label }
func (c *fakeConn) SharesFiles() bool { return c.shares }

func (c *fakeConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

// fakeContainer is a container without an attach connection: it never
// ends by itself, so Remove asks the connection to remove it.
type fakeContainer struct {
	id string
	at *confine.Attached

	mu      sync.Mutex // protects following
	closed  bool
	removed bool
}

func (ct *fakeContainer) ID() string                 { return ct.id }
func (ct *fakeContainer) Started() time.Time         { return time.Time{} }
func (ct *fakeContainer) Streams() *confine.Attached { return ct.at }

func (ct *fakeContainer) CloseStreams() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.closed = true
}

func (ct *fakeContainer) Wait(ctx context.Context) (int, error) { return 0, nil }

func (ct *fakeContainer) OOMKilled(ctx context.Context) (bool, error) { return false, nil }

func (ct *fakeContainer) Remove(ctx context.Context) error {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.removed = true
	return nil
}

// fakeLifecycle returns an engine whose connections are fakes, handed out in
// turn as it connects, closed when t ends.
func fakeLifecycle(t *testing.T, opts Options, conns ...*fakeConn) *Lifecycle {
	t.Helper()
	var mu sync.Mutex
	e := New(func(ctx context.Context) (Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(conns) == 0 {
			return nil, confine.Unavailable(nil, "no engine")
		}
		c := conns[0]
		conns = conns[1:]
		return c, nil
	}, opts)
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func start(t *testing.T, e *Lifecycle) *Container {
	t.Helper()
	b, err := e.Start(t.Context(), sandbox.Wait{})
	if err != nil {
		t.Fatal(err)
	}
	return b.(*Container)
}

// TestExitTurns: each live container gets the first turn free, as a delay
// in its environment, and gives it back when removed.
func TestExitTurns(t *testing.T) {
	c := &fakeConn{label: "one"}
	e := fakeLifecycle(t, Options{Name: "Fake", ExitDelay: "DELAY", ExitInterval: 250 * time.Millisecond}, c)
	a, b, d := start(t, e), start(t, e), start(t, e)
	if a.Turn() != 0 || b.Turn() != 1 || d.Turn() != 2 {
		t.Fatalf("turns %d, %d, %d; want 0, 1, 2", a.Turn(), b.Turn(), d.Turn())
	}
	var delays []string
	for _, s := range c.launched {
		delays = append(delays, s.Env["DELAY"])
	}
	if want := []string{"0", "0.25", "0.5"}; !slices.Equal(delays, want) {
		t.Errorf("delays %v; want %v", delays, want)
	}
	if err := b.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if x := start(t, e); x.Turn() != 1 {
		t.Errorf("a new container took turn %d; want 1, given back", x.Turn())
	}
	if e.opts.Spec.Env != nil {
		t.Errorf("the spec's environment was changed: %v", e.opts.Spec.Env)
	}
}

// TestNoExitTurns: without ExitDelay containers get no turn.
func TestNoExitTurns(t *testing.T) {
	c := &fakeConn{label: "one"}
	e := fakeLifecycle(t, Options{Name: "Fake"}, c)
	if b := start(t, e); b.Turn() != -1 {
		t.Errorf("turn %d; want none", b.Turn())
	}
	if _, ok := c.launched[0].Env["DELAY"]; ok || len(c.launched[0].Env) != 0 {
		t.Errorf("environment %v; want none added", c.launched[0].Env)
	}
}

// TestDepart: a burst may exit at once, then one an interval.
func TestDepart(t *testing.T) {
	e := New(nil, Options{ExitInterval: time.Hour, ExitBurst: 3})
	var got []bool
	for range 5 {
		got = append(got, e.depart())
	}
	if want := []bool{true, true, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("departures %v; want %v", got, want)
	}
}

// TestReconnect: a connection that stops answering after a failed start is
// dropped; the next start connects again and removes what the old one
// started. A connection gone by itself is replaced too.
func TestReconnect(t *testing.T) {
	one, two, three := &fakeConn{label: "one"}, &fakeConn{label: "two"}, &fakeConn{label: "three"}
	e := fakeLifecycle(t, Options{Name: "Fake"}, one, two, three)
	start(t, e)
	one.mu.Lock()
	one.dead, one.fail = true, errors.New("create failed")
	one.mu.Unlock()
	if _, err := e.Start(t.Context(), sandbox.Wait{}); err == nil {
		t.Fatal("Start succeeded on a dead connection")
	}
	if !one.closed || e.Conn() != nil {
		t.Fatalf("the dead connection was kept (closed %v)", one.closed)
	}
	start(t, e)
	if e.Conn() != two || len(two.removed) != 1 || !slices.Equal(two.removed[0], []string{"one"}) {
		t.Fatalf("after reconnecting: connection %v, removed %v; want two, removing one's", e.Conn(), two.removed)
	}

	two.mu.Lock()
	two.gone = "the service exited"
	two.mu.Unlock()
	start(t, e)
	if e.Conn() != three || !two.closed {
		t.Errorf("a gone connection was kept")
	}
}

// TestClose: Close ends every live container without a request, and the
// engine refuses to start more.
func TestClose(t *testing.T) {
	c := &fakeConn{label: "one"}
	e := fakeLifecycle(t, Options{Name: "Fake"}, c)
	boxes := []*Container{start(t, e), start(t, e)}
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, b := range boxes {
		ct := b.APIContainer().(*fakeContainer)
		if !ct.closed || ct.removed {
			t.Errorf("container %s after Close: streams closed %v, removed %v; want closed, not removed", ct.id, ct.closed, ct.removed)
		}
	}
	if !c.closed {
		t.Error("the connection is open after Close")
	}
	if _, err := e.Start(t.Context(), sandbox.Wait{}); !errors.Is(err, ErrShutDown) {
		t.Errorf("Start after Close: %v; want ErrShutDown", err)
	}
}

// TestChannelPrivateDir keeps the socket out where the state directory is not
// private to this user.
func TestChannelPrivateDir(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sockets are shared with containers on Linux only")
	}
	local := &fakeConn{shares: true}
	good := t.TempDir()
	if New(nil, Options{StateDir: good}).channelDir(local) == "" {
		t.Fatal("no socket folder in a private state directory")
	}
	if info, err := os.Stat(confine.ChannelsDir(good)); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("socket folder: %v, %v; want mode 0700", info.Mode(), err)
	}

	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	link := t.TempDir()
	if err := os.Symlink(t.TempDir(), confine.ChannelsDir(link)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"written by others": open, "a symbolic link": link}
	if os.Geteuid() == 0 {
		other := t.TempDir()
		if err := os.Mkdir(confine.ChannelsDir(other), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(confine.ChannelsDir(other), 12345, 12345); err != nil {
			t.Fatal(err)
		}
		cases["another user's"] = other
	}
	for name, dir := range cases {
		var log testenv.SyncBuffer
		e := New(nil, Options{Name: "Fake", StateDir: dir, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if got := e.channelDir(local); got != "" {
			t.Errorf("%s: socket folder %s", name, got)
		}
		if !strings.Contains(log.String(), "only this user can reach") {
			t.Errorf("%s: no warning:\n%s", name, log.String())
		}
	}
}

// TestChannelRemote leaves the socket out where the engine does not share
// this host's files.
func TestChannelRemote(t *testing.T) {
	e := New(nil, Options{StateDir: t.TempDir()})
	if dir := e.channelDir(&fakeConn{}); dir != "" {
		t.Errorf("socket folder %s for an engine elsewhere", dir)
	}
}
