package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// EngineError is an error the engine sent in a multiplexed stream (stream
// id 3), ending it.
type EngineError struct{ Msg string }

func (e *EngineError) Error() string { return e.Msg }

// Demux copies a multiplexed attach stream, as Docker's and Podman's attach
// endpoints send it, to stdout and stderr until it ends: 8-byte headers
// (stream id, 3 zero bytes, big-endian length) each followed by a frame.
// Writes that fail (the reader is gone: the container is being removed) are
// dropped and the stream is still drained, so stderr keeps filling. It
// returns nil when the stream ended at a frame boundary (or its connection
// was closed), an [*EngineError] for an error frame, and otherwise why it
// could not read on.
func Demux(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	// Made on the first frame: a sandbox that talks over its socket sends
	// none, and a thousand idle ones would hold 32 MB.
	var buf []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("reading attach stream: %w", err)
		}
		n := int64(binary.BigEndian.Uint32(hdr[4:]))
		var dst io.Writer
		switch hdr[0] {
		case 0, 1:
			dst = stdout
		case 2:
			dst = stderr
		case 3: // an error from the server
			msg, _ := io.ReadAll(io.LimitReader(r, n))
			return &EngineError{Msg: string(msg)}
		default:
			return fmt.Errorf("attach stream lost sync (stream id %d)", hdr[0])
		}
		if n > 0 && buf == nil {
			buf = make([]byte, 32<<10)
		}
		for n > 0 {
			k, err := r.Read(buf[:min(n, int64(len(buf)))])
			if k > 0 {
				n -= int64(k)
				if _, werr := dst.Write(buf[:k]); werr != nil {
					// The reader is gone (container being removed): keep
					// draining so stderr and Done still work.
					dst = io.Discard
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("reading attach stream: %w", err)
			}
		}
	}
}
