package confine

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
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
		{name: "server error", stream: [][]byte{frame(1, "a"), frame(3, "boom")}, wantOut: "a", wantErr: "boom"},
		{name: "lost sync", stream: [][]byte{frame(1, "a"), frame(7, "x")}, wantOut: "a", wantErr: "lost sync"},
		{name: "truncated frame", stream: [][]byte{frame(1, "abc")[:9]}, wantOut: "a", wantErr: "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			err := Demux(bytes.NewReader(bytes.Join(tt.stream, nil)), &out, &stderr)
			if out.String() != tt.wantOut {
				t.Errorf("stdout %d bytes %.20q, want %d bytes %.20q", out.Len(), out.String(), len(tt.wantOut), tt.wantOut)
			}
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			if got := stderr.String(); got != tt.wantStderr {
				t.Errorf("stderr %q, want %q", got, tt.wantStderr)
			}
		})
	}
}
