package python

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Frame kinds; see the package documentation.
const (
	KindStart   byte = 'S'
	KindReply   byte = 'R'
	KindStdout  byte = 'O'
	KindStderr  byte = 'E'
	KindRequest byte = 'Q'
	KindExit    byte = 'X'
)

const headerLen = 5

// Start is the payload of the 'S' frame.
type Start struct {
	// Files holds the embedded Python sources by slash-separated path relative
	// to the sandbox directory ("codebridge_runner.py", "mcp/__init__.py"); the
	// bootstrap imports them from memory.
	Files   map[string]string `json:"files"`
	Code    string            `json:"code"`
	Servers []ServerInfo      `json:"servers"`
}

// Request is the payload of a 'Q' frame: a call the sandbox makes to the [Host].
type Request struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Reply is the payload of an 'R' frame, answering the [Request] with the same ID.
// Exactly one of Result and Error is set (a nil Result means JSON null).
type Reply struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *ReplyError     `json:"error,omitempty"`
}

// ReplyError is a failed [Request]. The sandbox raises it as MCPError with the
// same code, message and data.
type ReplyError struct {
	Code    string `json:"code"` // unknown_server, unknown_tool, bad_arguments, server_failed, timeout, internal
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Exit is the payload of the 'X' frame, the last one the sandbox sends.
type Exit struct {
	ExitCode int      `json:"exit_code"`
	Error    *Failure `json:"error"` // nil when the code ran to the end or exited with status 0
}

// ErrFrameTooLarge is returned by the frame reader for a frame longer than [MaxFrame].
var ErrFrameTooLarge = errors.New("frame longer than MaxFrame")

// frameReader reads frames from the sandbox's stdout.
type frameReader struct {
	r   *bufio.Reader
	max int
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next frame. It returns io.EOF only at a frame boundary;
// a stream that ends inside a frame gives io.ErrUnexpectedEOF.
func (fr *frameReader) next() (kind byte, payload []byte, err error) {
	var head [headerLen]byte
	if _, err := io.ReadFull(fr.r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if uint64(n) > uint64(fr.max) {
		return head[0], nil, fmt.Errorf("%w: kind %q, %d bytes (limit %d)", ErrFrameTooLarge, head[0], n, fr.max)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(fr.r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return head[0], nil, err
	}
	return head[0], payload, nil
}

// frameWriter serializes frames onto the sandbox's stdin.
type frameWriter struct {
	mu sync.Mutex // protects w
	w  io.Writer
}

func (fw *frameWriter) write(kind byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return fmt.Errorf("%w: kind %q, %d bytes", ErrFrameTooLarge, kind, len(payload))
	}
	buf := make([]byte, headerLen, headerLen+len(payload))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:], uint32(len(payload)))
	buf = append(buf, payload...)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	_, err := fw.w.Write(buf)
	return err
}
