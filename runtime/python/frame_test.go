package python

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

func frameBytes(kind byte, payload string) []byte {
	b, err := protocol.Encode(kind, []byte(payload))
	if err != nil {
		panic(err)
	}
	return b
}

func cat(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

// hostKinds is the frame limit for reading what the host sends.
func hostKinds(kind byte) int {
	switch kind {
	case protocol.KindStart, protocol.KindRun, protocol.KindReply, protocol.KindInterrupt:
		return protocol.MaxFrame
	}
	return 0
}

// pipeStream is the host's end of a scripted sandbox.
type pipeStream struct {
	*io.PipeReader // sandbox stdout
	w              *io.PipeWriter
}

func (s pipeStream) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s pipeStream) Close() error {
	s.w.Close()
	return s.PipeReader.Close()
}

// fakeBox is a scripted sandbox: tests read what the host sends with next
// and write frames with send.
type fakeBox struct {
	in  *protocol.Reader
	out *io.PipeWriter
}

func newFakeBox(t *testing.T) (*fakeBox, Stream) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { inR.Close(); outW.Close() })
	return &fakeBox{in: protocol.NewReader(inR, hostKinds), out: outW}, pipeStream{PipeReader: outR, w: inW}
}

func (b *fakeBox) send(frames ...[]byte) { b.out.Write(cat(frames...)) }

// expect reads the next host frame and decodes it into v; it reports the kind.
func (b *fakeBox) expect(t *testing.T, kind byte, v any) {
	t.Helper()
	k, payload, err := b.in.Next()
	if err != nil || k != kind {
		t.Errorf("host sent %q (%v), want %q", k, err, kind)
		return
	}
	if v != nil {
		if err := json.Unmarshal(payload, v); err != nil {
			t.Errorf("decoding %q frame: %v", kind, err)
		}
	}
}

// fakeRun runs a program against a scripted sandbox that reads the start and
// run frames, then writes out and closes its stdout.
func fakeRun(t *testing.T, out []byte, h Host) (*Result, error, *protocol.Init, *protocol.RunFrame) {
	t.Helper()
	box, s := newFakeBox(t)
	var init protocol.Init
	var rf protocol.RunFrame
	go func() {
		box.expect(t, protocol.KindStart, &init)
		box.expect(t, protocol.KindRun, &rf)
		box.send(out)
		box.out.Close()
	}()
	if h == nil {
		h = &fakeHost{}
	}
	it := Start(s, protocol.Init{}, Limits{})
	defer it.Close()
	res, err := it.Run(t.Context(), Program{Code: "print(1)", Servers: testServers}, h, time.Minute)
	it.Close()
	return res, err, &init, &rf
}

const exit0 = `{"run":1,"exit_code":0,"error":null}`

func TestRunFraming(t *testing.T) {
	tests := []struct {
		name     string
		out      []byte
		wantErr  error
		wantKind protocol.FailureKind
		stdout   string
	}{
		{name: "clean", out: cat(frameBytes('O', "a"), frameBytes('E', "b"), frameBytes('O', "c"), frameBytes('X', exit0)), stdout: "ac"},
		{name: "frames after exit are not this run's", out: cat(frameBytes('X', exit0), []byte("garbage"))},
		{name: "exit with failure", out: frameBytes('X', `{"run":1,"exit_code":3,"error":{"kind":"exit","message":"exit status 3"}}`), wantKind: protocol.FailExit},
		{name: "eof without exit", out: frameBytes('O', "partial"), wantErr: ErrNoExit, stdout: "partial"},
		{name: "eof inside a frame", out: frameBytes('O', "partial")[:7], wantErr: ErrNoExit},
		{name: "no output at all", out: nil, wantErr: ErrNoExit},
		{name: "unknown kind", out: cat(frameBytes('O', "x"), frameBytes('Z', "")), wantErr: ErrProtocol, wantKind: protocol.FailProtocol, stdout: "x"},
		{name: "host kind from sandbox", out: frameBytes('S', "{}"), wantErr: ErrProtocol, wantKind: protocol.FailProtocol},
		{name: "text instead of frames", out: []byte("Traceback (most recent call last):\n"), wantErr: ErrProtocol, wantKind: protocol.FailProtocol},
		{name: "forged 4 GiB request header", out: []byte{'Q', 0xff, 0xff, 0xff, 0xff}, wantErr: protocol.ErrFrameTooLarge, wantKind: protocol.FailProtocol},
		{name: "output frame over 64 KiB", out: []byte{'O', 0, 1, 0, 1}, wantErr: protocol.ErrFrameTooLarge, wantKind: protocol.FailProtocol},
		{name: "exit frame over 1 MiB", out: []byte{'X', 0, 0x10, 0, 1}, wantErr: protocol.ErrFrameTooLarge, wantKind: protocol.FailProtocol},
		{name: "malformed exit", out: frameBytes('X', `{"run":1,"exit_code":"zero"}`), wantErr: ErrProtocol, wantKind: protocol.FailProtocol},
		{name: "malformed request", out: frameBytes('Q', `{"id":`), wantErr: ErrProtocol, wantKind: protocol.FailProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err, init, rf := fakeRun(t, tt.out, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if res == nil {
				t.Fatal("nil Result")
			}
			if tt.wantKind == "" && res.Error != nil || tt.wantKind != "" && (res.Error == nil || res.Error.Kind != tt.wantKind) {
				t.Errorf("Result.Error = %+v, want kind %q", res.Error, tt.wantKind)
			}
			if res.Error != nil && res.Error.Kind == protocol.FailProtocol && strings.Count(res.Error.Message, "frame protocol") != 1 {
				t.Errorf("message %q: want it to say once that the sandbox broke the frame protocol", res.Error.Message)
			}
			if res.Stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", res.Stdout, tt.stdout)
			}
			if rf.Run != 1 || rf.Code != "print(1)" || len(rf.Servers) != 2 {
				t.Errorf("run frame = %+v", rf)
			}
			if init.Files["codebridge_runner.py"] == "" || init.Files["mcp/__init__.py"] == "" {
				t.Errorf("start frame has files %v", slices.Collect(maps.Keys(init.Files)))
			}
			if _, ok := init.Files["bootstrap.py"]; ok {
				t.Error("start frame carries bootstrap.py, which Command already runs")
			}
		})
	}
}

func TestRunReplies(t *testing.T) {
	box, s := newFakeBox(t)
	replies := make(chan map[int64]protocol.Reply, 1)
	go func() {
		box.expect(t, protocol.KindStart, nil)
		box.expect(t, protocol.KindRun, nil)
		// Three requests at once, answered out of order by the host.
		for i, method := range []string{"slow", "fail", "ok"} {
			box.send(frameBytes('Q', `{"id":`+string(rune('1'+i))+`,"method":"`+method+`","params":{"x":1}}`))
		}
		got := map[int64]protocol.Reply{}
		for len(got) < 3 {
			var r protocol.Reply
			box.expect(t, protocol.KindReply, &r)
			got[r.ID] = r
		}
		replies <- got
		box.send(frameBytes('X', exit0))
	}()
	release := make(chan struct{})
	h := &fakeHost{handle: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case "slow":
			<-release // answered after the other two
			return json.RawMessage(params), nil
		case "fail":
			defer close(release)
			return nil, &protocol.Error{Code: "unknown_tool", Message: "no such tool", Data: []string{"a", "b"}}
		}
		return nil, nil
	}}
	it := Start(s, protocol.Init{}, Limits{})
	defer it.Close()
	res, err := it.Run(t.Context(), Program{}, h, time.Minute)
	if err != nil || res.Error != nil {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	got := <-replies
	if r := got[1]; string(r.Result) != `{"x":1}` || r.Error != nil {
		t.Errorf("reply 1 = %+v %s", r, r.Result)
	}
	if r := got[2]; r.Error == nil || r.Error.Code != "unknown_tool" || r.Error.Message != "no such tool" || r.Result != nil {
		t.Errorf("reply 2 = %+v", r)
	} else if d, _ := json.Marshal(r.Error.Data); string(d) != `["a","b"]` {
		t.Errorf("reply 2 data = %s", d)
	}
	if r := got[3]; string(r.Result) != "null" || r.Error != nil {
		t.Errorf("reply 3 = %+v (result %q)", r, r.Result)
	}
}

func TestRunNilHost(t *testing.T) {
	box, s := newFakeBox(t)
	var reply protocol.Reply
	go func() {
		box.expect(t, protocol.KindStart, nil)
		box.expect(t, protocol.KindRun, nil)
		box.send(frameBytes('Q', `{"id":7,"method":"list_tools","params":{}}`))
		box.expect(t, protocol.KindReply, &reply)
		box.send(frameBytes('X', exit0))
	}()
	it := Start(s, protocol.Init{}, Limits{})
	defer it.Close()
	if _, err := it.Run(t.Context(), Program{}, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if reply.ID != 7 || reply.Error == nil || reply.Error.Code != "internal" {
		t.Errorf("reply = %+v", reply)
	}
}

// TestOutputBetweenRuns: output that arrives after a run's exit frame and
// before the next run (from threads or processes the code left running) is
// returned with the next run as background output, never lost and never
// mixed into a run's own output.
func TestOutputBetweenRuns(t *testing.T) {
	box, s := newFakeBox(t)
	between := make(chan struct{})
	go func() {
		box.expect(t, protocol.KindStart, nil)
		box.expect(t, protocol.KindRun, nil)
		box.send(frameBytes('O', "own 1\n"), frameBytes('X', exit0))
		<-between // run 1 has returned
		box.send(frameBytes('O', "late\n"), frameBytes('E', "late err\n"))
		box.expect(t, protocol.KindRun, nil)
		box.send(frameBytes('O', "own 2\n"), frameBytes('X', `{"run":2,"exit_code":0}`))
	}()
	it := Start(s, protocol.Init{}, Limits{})
	defer it.Close()
	r1, err := it.Run(t.Context(), Program{}, nil, time.Minute)
	if err != nil || r1.Stdout != "own 1\n" {
		t.Fatalf("run 1 = %+v, %v", r1, err)
	}
	close(between)
	// Run 2 may start before or after the late output arrives; either way
	// it is not run 2's own output. Wait until it has arrived.
	for {
		it.mu.Lock()
		n := it.stray.total
		it.mu.Unlock()
		if n == int64(len("late\nlate err\n")) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	r2, err := it.Run(t.Context(), Program{}, nil, time.Minute)
	if err != nil || r2.Stdout != "own 2\n" || r2.Background != "late\nlate err\n" {
		t.Errorf("run 2 = stdout %q background %q, %v", r2.Stdout, r2.Background, err)
	}
}

// TestFloodWithoutReading is the wedge of issue 7: the sandbox sends
// thousands of requests and never reads a reply. The host must keep reading,
// refuse what is past its bounds, and at the time limit tear the streams
// down and return, with every goroutine stopped.
func TestFloodWithoutReading(t *testing.T) {
	box, s := newFakeBox(t)
	const n = MaxRequests + MaxQueuedRequests + 500
	sent := make(chan error, 1)
	go func() {
		box.expect(t, protocol.KindStart, nil)
		box.expect(t, protocol.KindRun, nil)
		var err error
		for i := range n {
			if _, err = box.out.Write(frameBytes('Q', fmt.Sprintf(`{"id":%d,"method":"m","params":{}}`, i+1))); err != nil {
				break
			}
		}
		sent <- err // never reads its stdin
	}()
	var calls atomic.Int64
	h := &fakeHost{handle: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		calls.Add(1)
		<-ctx.Done() // a downstream call that outlives the run
		return nil, ctx.Err()
	}}
	it := Start(s, protocol.Init{}, Limits{InterruptGrace: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		if err := <-sent; err != nil {
			t.Errorf("the host stopped reading after some requests: %v", err)
		}
		cancel() // all sent: now end the run as a client would
	}()
	res, err := it.Run(ctx, Program{}, h, time.Hour)
	if !errors.Is(err, context.Canceled) || res.Error == nil || res.Error.Kind != protocol.FailTimeout {
		t.Errorf("Run = %+v, %v; want a cancelled run whose sandbox was killed", res.Error, err)
	}
	it.Close() // returns only when the reader, the writer and the host calls have stopped
	if c := calls.Load(); c != MaxRequests {
		t.Errorf("host served %d requests at once, want %d", c, MaxRequests)
	}
}

// TestTooManyRequests: past the queue's bound a request is refused at once
// with too_many_requests, while the run goes on.
func TestTooManyRequests(t *testing.T) {
	box, s := newFakeBox(t)
	const n = MaxRequests + MaxQueuedRequests + 3
	refused := make(chan []int64, 1)
	release := make(chan struct{})
	go func() {
		box.expect(t, protocol.KindStart, nil)
		box.expect(t, protocol.KindRun, nil)
		for i := range n {
			box.send(frameBytes('Q', fmt.Sprintf(`{"id":%d,"method":"m","params":{}}`, i+1)))
		}
		var ids []int64
		for len(ids) < 3 {
			var r protocol.Reply
			box.expect(t, protocol.KindReply, &r)
			if r.Error == nil || r.Error.Code != "too_many_requests" {
				t.Errorf("first replies should be refusals, got %+v", r)
				break
			}
			ids = append(ids, r.ID)
		}
		refused <- ids
		close(release)
		for range n - 3 {
			box.expect(t, protocol.KindReply, nil)
		}
		box.send(frameBytes('X', exit0))
	}()
	h := &fakeHost{handle: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		<-release
		return "ok", nil
	}}
	it := Start(s, protocol.Init{}, Limits{})
	defer it.Close()
	res, err := it.Run(t.Context(), Program{}, h, time.Minute)
	if err != nil || res.Error != nil {
		t.Fatalf("Run = %+v, %v", res.Error, err)
	}
	if ids := <-refused; !slices.Equal(ids, []int64{n - 2, n - 1, n}) {
		t.Errorf("refused %v, want the last three", ids)
	}
}

// FuzzRun feeds arbitrary sandbox output to a run: it must return, never panic.
func FuzzRun(f *testing.F) {
	f.Add(cat(frameBytes('O', "hi"), frameBytes('Q', `{"id":1,"method":"m","params":null}`), frameBytes('X', exit0)))
	f.Add(frameBytes('X', `{"run":1,"exit_code":1,"error":{"kind":"exception","message":"\xff"}}`))
	f.Add([]byte{'E', 0, 0, 0, 2, 0xc3})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := readerStream{bytes.NewReader(data)}
		res, err := Exec(t.Context(), s, Program{OutputLimit: 16}, &fakeHost{}, 5*time.Second)
		if res == nil {
			t.Fatal("nil Result")
		}
		if errors.Is(err, ErrStuck) {
			t.Fatal("a run over a stream that ended did not return")
		}
		if res.Error != nil && res.Error.Kind == protocol.FailProtocol && !errors.Is(err, ErrProtocol) {
			t.Errorf("protocol failure without ErrProtocol: %v", err)
		}
	})
}

// readerStream is a sandbox whose output is fixed and whose input is dropped.
type readerStream struct{ io.Reader }

func (readerStream) Write(p []byte) (int, error) { return len(p), nil }
func (readerStream) Close() error                { return nil }
