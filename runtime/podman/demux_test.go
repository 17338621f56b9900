package podman

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"strings"
	"testing"
)

func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestPump(t *testing.T) {
	big := strings.Repeat("y", 100<<10) // larger than the copy buffer
	tests := []struct {
		name       string
		stream     [][]byte
		wantOut    string
		wantErr    string
		wantStderr string
	}{
		{
			name:       "stdout and stderr interleaved",
			stream:     [][]byte{frame(1, "a"), frame(2, "e1"), frame(1, "b"), frame(0, "c"), frame(2, "e2"), frame(1, "")},
			wantOut:    "abc",
			wantStderr: "e1e2",
		},
		{name: "frame larger than the buffer", stream: [][]byte{frame(1, big)}, wantOut: big},
		{name: "empty stream", wantOut: ""},
		{name: "server error", stream: [][]byte{frame(1, "a"), frame(3, "boom")}, wantOut: "a", wantErr: "podman attach: boom"},
		{name: "lost sync", stream: [][]byte{frame(1, "a"), frame(7, "x")}, wantOut: "a", wantErr: "lost sync"},
		{name: "truncated frame", stream: [][]byte{frame(1, "abc")[:9]}, wantOut: "a", wantErr: "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := &Container{ID: "test", stderr: &capBuffer{max: stderrCap}, done: make(chan struct{})}
			pr, pw := io.Pipe()
			go ct.pump(bytes.NewReader(bytes.Join(tt.stream, nil)), pw)
			out, err := io.ReadAll(pr)
			if string(out) != tt.wantOut {
				t.Errorf("stdout %d bytes %.20q, want %d bytes %.20q", len(out), out, len(tt.wantOut), tt.wantOut)
			}
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			<-ct.done
			if got := ct.stderr.String(); got != tt.wantStderr {
				t.Errorf("stderr %q, want %q", got, tt.wantStderr)
			}
		})
	}
}

func TestCapBuffer(t *testing.T) {
	b := &capBuffer{max: 4}
	b.Write([]byte("ab"))
	b.Write([]byte("cdef"))
	if got := b.String(); got != "abcd… (2 more bytes)" {
		t.Errorf("capBuffer = %q", got)
	}
}

func TestStale(t *testing.T) {
	c := &Client{host: "h", pid: os.Getpid(), owner: map[string]string{LabelOwner: ownerID("h", os.Getpid())}}
	if st, ok := processStart(os.Getpid()); ok {
		c.owner[LabelOwnerStart] = st
	}
	ppid := os.Getppid()
	type test struct {
		name   string
		labels map[string]string
		want   bool
	}
	tests := []test{
		{"no owner", map[string]string{LabelManaged: "true"}, false},
		{"malformed owner", map[string]string{LabelOwner: "h"}, false},
		{"bad pid", map[string]string{LabelOwner: "h/x"}, false},
		{"other host, dead pid", map[string]string{LabelOwner: "other/999999999"}, false},
		{"dead pid", map[string]string{LabelOwner: "h/999999999"}, true},
		{"live parent", map[string]string{LabelOwner: ownerID("h", ppid)}, false},
		{"us", c.owner, false},
	}
	if _, ok := processStart(ppid); ok {
		tests = append(tests,
			test{"reused pid", map[string]string{LabelOwner: ownerID("h", ppid), LabelOwnerStart: "1"}, true},
			test{"our pid, earlier process", map[string]string{LabelOwner: c.owner[LabelOwner], LabelOwnerStart: "1"}, true},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.stale(tt.labels); got != tt.want {
				t.Errorf("stale(%v) = %v, want %v", tt.labels, got, tt.want)
			}
		})
	}
}
