package protocol

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func frameBytes(kind byte, payload string) []byte {
	b, err := Encode(kind, []byte(payload))
	if err != nil {
		panic(err)
	}
	return b
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
			fr := NewReader(bytes.NewReader(tt.in), func(byte) int { return max })
			var kinds []byte
			for {
				kind, _, err := fr.Next()
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
		fr := NewReader(bytes.NewReader(data), func(byte) int { return 1 << 16 })
		read := 0
		for {
			_, payload, err := fr.Next()
			if err != nil {
				return
			}
			read += HeaderLen + len(payload)
			if read > len(data) {
				t.Fatalf("read %d bytes of frames from %d bytes of input", read, len(data))
			}
		}
	})
}
