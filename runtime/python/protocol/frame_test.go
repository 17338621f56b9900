package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
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

// TestFrameReaderAllocatesAsDataArrives checks that a header claiming the
// largest request costs the host little until the payload arrives: a sandbox
// that stalls after the header must not pin 4 MiB of memory.
func TestFrameReaderAllocatesAsDataArrives(t *testing.T) {
	const runs = 10
	head := []byte{KindRequest, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(head[1:], DefaultMaxRequestFrame)
	limit := func(byte) int { return DefaultMaxRequestFrame }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		fr := NewReader(bytes.NewReader(head), limit)
		if _, _, err := fr.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("error = %v, want %v", err, io.ErrUnexpectedEOF)
		}
	}
	runtime.ReadMemStats(&after)
	perRun := (after.TotalAlloc - before.TotalAlloc) / runs
	if perRun > 128<<10 {
		t.Errorf("a header claiming %d bytes with no payload allocated %d bytes, want at most %d", DefaultMaxRequestFrame, perRun, 128<<10)
	}
}

// TestFrameReaderLargePayload checks that a payload read in growing chunks
// comes out whole, at each size around the first chunk and its doublings.
func TestFrameReaderLargePayload(t *testing.T) {
	for _, n := range []int{0, 1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 200 << 10, DefaultMaxRequestFrame} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		// iotest.OneByteReader would be slow at 4 MiB; a half-reader still
		// makes every chunk take several reads.
		fr := NewReader(iotest.HalfReader(bytes.NewReader(frameBytes(KindRequest, string(payload)))), func(byte) int { return DefaultMaxRequestFrame })
		_, got, err := fr.Next()
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("%d bytes: payload differs (got %d bytes)", n, len(got))
		}
	}
}

// BenchmarkFrameReader reads frames of the sizes the host sees: small
// requests and output chunks, and the largest request.
func BenchmarkFrameReader(b *testing.B) {
	for _, size := range []int{100, 64 << 10, 1 << 20, DefaultMaxRequestFrame} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			frame := frameBytes(KindRequest, string(make([]byte, size)))
			limit := func(byte) int { return DefaultMaxRequestFrame }
			rd := bytes.NewReader(frame)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(frame)
				if _, _, err := NewReader(rd, limit).Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
