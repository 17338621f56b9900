package python

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func frameBytes(kind byte, payload string) []byte {
	b := make([]byte, headerLen, headerLen+len(payload))
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

func cat(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

func TestFrameReader(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		max     int
		kinds   string // kinds read before the error
		wantErr error
	}{
		{name: "empty", in: nil, wantErr: io.EOF},
		{name: "two frames", in: cat(frameBytes('O', "ab"), frameBytes('X', "{}")), kinds: "OX", wantErr: io.EOF},
		{name: "empty payload", in: frameBytes('E', ""), kinds: "E", wantErr: io.EOF},
		{name: "partial header", in: []byte{'O', 0, 0}, wantErr: io.ErrUnexpectedEOF},
		{name: "partial payload", in: frameBytes('O', "abcdef")[:8], wantErr: io.ErrUnexpectedEOF},
		{name: "header only", in: frameBytes('O', "abc")[:5], wantErr: io.ErrUnexpectedEOF},
		{name: "too large", in: []byte{'Q', 0xff, 0xff, 0xff, 0xff}, max: MaxFrame, wantErr: ErrFrameTooLarge},
		{name: "just over a small limit", in: frameBytes('O', "12345"), max: 4, wantErr: ErrFrameTooLarge},
		{name: "at a small limit", in: frameBytes('O', "1234"), max: 4, kinds: "O", wantErr: io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			max := tt.max
			if max == 0 {
				max = MaxFrame
			}
			fr := newFrameReader(bytes.NewReader(tt.in), max)
			var kinds []byte
			for {
				kind, _, err := fr.next()
				if err != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Errorf("error = %v, want %v", err, tt.wantErr)
					}
					break
				}
				kinds = append(kinds, kind)
			}
			if string(kinds) != tt.kinds {
				t.Errorf("kinds = %q, want %q", kinds, tt.kinds)
			}
		})
	}
}

// FuzzFrameReader checks the reader never panics and returns what the headers say.
func FuzzFrameReader(f *testing.F) {
	f.Add(cat(frameBytes('O', "hello"), frameBytes('X', `{"exit_code":0}`)))
	f.Add([]byte{'Q', 0xff, 0xff, 0xff, 0xff, 1, 2})
	f.Add([]byte{'O', 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := newFrameReader(bytes.NewReader(data), 1<<16)
		read := 0
		for {
			_, payload, err := fr.next()
			if err != nil {
				return
			}
			read += headerLen + len(payload)
			if read > len(data) {
				t.Fatalf("read %d bytes of frames from %d bytes of input", read, len(data))
			}
		}
	})
}

// fakeSandbox runs Exec against a scripted sandbox: it reads the start frame,
// then writes out and closes stdout. Requests are answered by h.
func fakeSandbox(t *testing.T, out []byte, h Host) (*Result, error, *Start) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { inR.Close(); outW.Close() })
	started := make(chan *Start, 1)
	go func() {
		fr := newFrameReader(inR, MaxFrame)
		kind, payload, err := fr.next()
		var s Start
		if err != nil || kind != KindStart || json.Unmarshal(payload, &s) != nil {
			started <- nil
		} else {
			started <- &s
		}
		go io.Copy(io.Discard, inR)
		outW.Write(out)
		outW.Close()
	}()
	if h == nil {
		h = &fakeHost{}
	}
	res, err := Exec(t.Context(), inW, outR, Program{Code: "print(1)", Servers: testServers}, h)
	return res, err, <-started
}

func TestExecFraming(t *testing.T) {
	exit0 := frameBytes('X', `{"exit_code":0,"error":null}`)
	tests := []struct {
		name     string
		out      []byte
		wantErr  error
		wantKind FailureKind
		stdout   string
	}{
		{name: "clean", out: cat(frameBytes('O', "a"), frameBytes('E', "b"), frameBytes('O', "c"), exit0), stdout: "ac"},
		{name: "frames after exit are ignored", out: cat(exit0, []byte("garbage"))},
		{name: "exit with failure", out: frameBytes('X', `{"exit_code":3,"error":{"kind":"exit","message":"exit status 3"}}`), wantKind: FailExit},
		{name: "eof without exit", out: frameBytes('O', "partial"), wantErr: ErrNoExit, stdout: "partial"},
		{name: "eof inside a frame", out: frameBytes('O', "partial")[:7], wantErr: ErrNoExit},
		{name: "no output at all", out: nil, wantErr: ErrNoExit},
		{name: "unknown kind", out: cat(frameBytes('O', "x"), frameBytes('Z', "")), wantErr: ErrProtocol, wantKind: FailProtocol, stdout: "x"},
		{name: "host kind from sandbox", out: frameBytes('S', "{}"), wantErr: ErrProtocol, wantKind: FailProtocol},
		{name: "text instead of frames", out: []byte("Traceback (most recent call last):\n"), wantErr: ErrProtocol, wantKind: FailProtocol},
		{name: "frame too large", out: []byte{'O', 0xff, 0xff, 0xff, 0xff}, wantErr: ErrProtocol, wantKind: FailProtocol},
		{name: "malformed exit", out: frameBytes('X', `{"exit_code":"zero"}`), wantErr: ErrProtocol, wantKind: FailProtocol},
		{name: "malformed request", out: frameBytes('Q', `{"id":`), wantErr: ErrProtocol, wantKind: FailProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err, start := fakeSandbox(t, tt.out, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if res == nil {
				t.Fatal("nil Result")
			}
			if tt.wantKind == "" && res.Error != nil || tt.wantKind != "" && (res.Error == nil || res.Error.Kind != tt.wantKind) {
				t.Errorf("Result.Error = %+v, want kind %q", res.Error, tt.wantKind)
			}
			if res.Stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", res.Stdout, tt.stdout)
			}
			if start == nil || start.Code != "print(1)" || len(start.Servers) != 2 || start.Files["codebridge_runner.py"] == "" || start.Files["mcp/__init__.py"] == "" {
				t.Errorf("start frame = %+v", start)
			}
			if _, ok := start.Files["bootstrap.py"]; ok {
				t.Error("start frame carries bootstrap.py, which Command already runs")
			}
		})
	}
}

func TestExecReplies(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inR.Close()
	defer outW.Close()
	replies := make(chan map[int64]Reply, 1)
	go func() {
		fr := newFrameReader(inR, MaxFrame)
		fr.next() // start
		// Three requests at once, answered out of order by the host.
		for i, method := range []string{"slow", "fail", "ok"} {
			outW.Write(frameBytes('Q', `{"id":`+string(rune('1'+i))+`,"method":"`+method+`","params":{"x":1}}`))
		}
		got := map[int64]Reply{}
		for len(got) < 3 {
			kind, payload, err := fr.next()
			if err != nil || kind != KindReply {
				break
			}
			var r Reply
			json.Unmarshal(payload, &r)
			got[r.ID] = r
		}
		replies <- got
		outW.Write(frameBytes('X', `{"exit_code":0}`))
	}()
	h := &fakeHost{handle: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case "slow":
			time.Sleep(50 * time.Millisecond)
			return json.RawMessage(params), nil
		case "fail":
			return nil, rpcErr{code: "unknown_tool", msg: "no such tool", data: []string{"a", "b"}}
		}
		return nil, nil
	}}
	res, err := Exec(t.Context(), inW, outR, Program{}, h)
	if err != nil || res.Error != nil {
		t.Fatalf("Exec = %+v, %v", res, err)
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

func TestExecNilHost(t *testing.T) {
	var reply Reply
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inR.Close()
	go func() {
		fr := newFrameReader(inR, MaxFrame)
		fr.next()
		outW.Write(frameBytes('Q', `{"id":7,"method":"list_tools","params":{}}`))
		_, payload, _ := fr.next()
		json.Unmarshal(payload, &reply)
		outW.Write(frameBytes('X', `{"exit_code":0}`))
		outW.Close()
	}()
	if _, err := Exec(t.Context(), inW, outR, Program{}, nil); err != nil {
		t.Fatal(err)
	}
	if reply.ID != 7 || reply.Error == nil || reply.Error.Code != "internal" {
		t.Errorf("reply = %+v", reply)
	}
}

func TestExecStartWriteFails(t *testing.T) {
	outR, outW := io.Pipe()
	outW.Close()
	_, err := Exec(t.Context(), failingWriter{}, outR, Program{}, nil)
	if !errors.Is(err, ErrNoExit) || !strings.Contains(err.Error(), "sending start frame: container gone") {
		t.Errorf("err = %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("container gone") }

// FuzzExec feeds arbitrary sandbox output to Exec: it must return, never panic.
func FuzzExec(f *testing.F) {
	f.Add(cat(frameBytes('O', "hi"), frameBytes('Q', `{"id":1,"method":"m","params":null}`), frameBytes('X', `{"exit_code":0}`)))
	f.Add(frameBytes('X', `{"exit_code":1,"error":{"kind":"exception","message":"\xff"}}`))
	f.Add([]byte{'E', 0, 0, 0, 2, 0xc3})
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := Exec(ctx, io.Discard, bytes.NewReader(data), Program{OutputLimit: 16}, &fakeHost{})
		if res == nil {
			t.Fatal("nil Result")
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("Exec did not return")
		}
		if res.Error != nil && res.Error.Kind == FailProtocol && !errors.Is(err, ErrProtocol) {
			t.Errorf("protocol failure without ErrProtocol: %v", err)
		}
	})
}
