package protocol

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Frame kinds; see the package documentation.
const (
	KindStart     byte = 'S' // host → sandbox, once: [Start]
	KindRun       byte = 'C' // host → sandbox: [RunFrame]
	KindReply     byte = 'R' // host → sandbox: [Reply]
	KindInterrupt byte = 'I' // host → sandbox: [Interrupt]
	KindStdout    byte = 'O' // sandbox → host: raw bytes
	KindStderr    byte = 'E' // sandbox → host: raw bytes
	KindRequest   byte = 'Q' // sandbox → host: [Request]
	KindExit      byte = 'X' // sandbox → host: [Exit]
)

// HeaderLen is the length of a frame's header: its kind and its payload's length.
const HeaderLen = 5

// Limits on what the sandbox may send in one frame, by kind. The reader checks
// a frame's length against its kind's limit before allocating anything, then
// allocates as the payload arrives (64 KiB first, doubling up to the claimed
// length), so a header whose payload never comes costs the host little. The sandbox's output pumps send at
// most 64 KiB per frame; an exit frame carries a clipped message and
// traceback.
const (
	MaxOutputFrame = 64 << 10
	MaxExitFrame   = 1 << 20
	// DefaultMaxRequestFrame bounds a request when python.Limits.MaxRequest is 0.
	DefaultMaxRequestFrame = 4<<20 + 64<<10
	// MaxFrame bounds a frame the host sends (a reply or a start frame).
	MaxFrame = 64 << 20
)

// Init is the payload of the 'S' frame, sent once when an interpreter starts
// (for a warm container, while it waits for its first run).
type Init struct {
	// Files holds the embedded Python sources by slash-separated path relative
	// to the sandbox directory ("codebridge_runner.py", "mcp/__init__.py"); the
	// bootstrap imports them from memory.
	Files map[string]string `json:"files"`
	// MaxRequest is the largest request frame the host reads, so the sandbox
	// refuses a bigger one itself, with an error the code can act on, instead
	// of having its interpreter ended for breaking the protocol.
	MaxRequest int `json:"max_request"`
	// MaxAttachment is the largest image or file a run may return; the
	// sandbox sends only the size of a bigger one, so the host can say what
	// was dropped. 0 means no attachments are accepted.
	MaxAttachment int `json:"max_attachment"`
	// Preload names modules the interpreter imports in the background while
	// it waits for its first run, so a session's first `import pandas` is
	// instant; one that is not installed is skipped.
	Preload []string `json:"preload,omitempty"`
	// WaitLimit is how many seconds the interpreter waits for its next run
	// before it exits; 0 leaves it to its environment (CODEBRIDGE_WAIT_LIMIT,
	// which also bounds the wait for this frame; none if unset). A pod of
	// a warm pool waits for its claim with no limit, and its session still
	// ends when nobody uses it.
	WaitLimit float64 `json:"wait_limit,omitempty"`
}

// Source is a named piece of Python source.
type Source struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// RunFrame is the payload of a 'C' frame: one run_python call.
type RunFrame struct {
	Run     int          `json:"run"` // 1, 2, ... within the interpreter
	Code    string       `json:"code"`
	Servers []ServerInfo `json:"servers"`
	// Prelude is defined in the namespace before the code: saved helpers,
	// each under its own file name. Sent with a session's first run.
	Prelude []Source `json:"prelude,omitempty"`
	// CheckArgs checks the code's tool calls against the tools' schemas
	// before any of it runs: a mismatch fails the run with
	// [FailArgumentCheck] (see docs/sandbox-api.md).
	CheckArgs bool `json:"check_args,omitempty"`
}

// Interrupt is the payload of an 'I' frame: raise KeyboardInterrupt in the
// code of the given run if it is still running.
type Interrupt struct {
	Run int `json:"run"`
}

// Request is the payload of a 'Q' frame: a call the sandbox makes to the host.
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
	Error  *Error          `json:"error,omitempty"`
}

// Exit is the payload of the 'X' frame: how one run's code ended. The
// interpreter then waits for the next run.
type Exit struct {
	Run      int      `json:"run"`
	ExitCode int      `json:"exit_code"`
	Error    *Failure `json:"error"` // nil when the code ran to the end or exited with status 0
	// PreloadMissing, in the interpreter's first exit frame, names the
	// modules of [Init.Preload] that are not installed in its image.
	PreloadMissing []string `json:"preload_missing,omitempty"`
}

// Errors of a frame the reader refuses; the stream cannot be read further.
var (
	// ErrFrameTooLarge: a frame is longer than its kind allows.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrUnexpectedKind: a frame of a kind the reader does not accept.
	ErrUnexpectedKind = errors.New("unexpected frame kind")
)

// Reader reads frames from a stream.
type Reader struct {
	r     *bufio.Reader
	limit func(kind byte) int // largest payload of a kind; 0 means the kind is not allowed
}

// NewReader returns a reader of the frames on r; limit gives the largest
// payload of each kind, 0 for a kind that is not allowed.
func NewReader(r io.Reader, limit func(kind byte) int) *Reader {
	// Small frames batch in the buffer; a payload larger than what is
	// buffered is read straight into its own slice. Every live session holds
	// one: 8 KiB each, not 64 (64 MB at a thousand sessions).
	return &Reader{r: bufio.NewReaderSize(r, 8<<10), limit: limit}
}

// Next returns the next frame. It returns io.EOF only at a frame boundary;
// a stream that ends inside a frame gives io.ErrUnexpectedEOF.
func (fr *Reader) Next() (kind byte, payload []byte, err error) {
	var head [HeaderLen]byte
	if _, err := io.ReadFull(fr.r, head[:]); err != nil {
		return 0, nil, err
	}
	kind = head[0]
	n := binary.BigEndian.Uint32(head[1:])
	max := fr.limit(kind)
	if max <= 0 {
		return kind, nil, fmt.Errorf("%w %q", ErrUnexpectedKind, kind)
	}
	if uint64(n) > uint64(max) {
		return kind, nil, fmt.Errorf("%w: kind %q, %d bytes (limit %d)", ErrFrameTooLarge, kind, n, max)
	}
	payload, err = fr.readPayload(int(n))
	if err != nil {
		return kind, nil, err
	}
	return kind, payload, nil
}

// firstChunk is the most the reader allocates for a payload before any of it
// has arrived; the buffer then doubles as data comes, up to the claimed length.
const firstChunk = 64 << 10

// readPayload reads n bytes, growing its buffer as they arrive, so memory
// follows what the sender has sent rather than what its header claims.
func (fr *Reader) readPayload(n int) ([]byte, error) {
	buf := make([]byte, min(n, firstChunk))
	read := 0
	for {
		m, err := io.ReadFull(fr.r, buf[read:])
		read += m
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if read == n {
			return buf, nil
		}
		next := min(n, 2*len(buf))
		buf = slices.Grow(buf, next-len(buf))[:next]
	}
}

// Encode returns the bytes of one frame.
func Encode(kind byte, payload []byte) ([]byte, error) {
	if len(payload) > MaxFrame {
		return nil, fmt.Errorf("%w: kind %q, %d bytes (limit %d)", ErrFrameTooLarge, kind, len(payload), MaxFrame)
	}
	buf := make([]byte, HeaderLen, HeaderLen+len(payload))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:], uint32(len(payload)))
	return append(buf, payload...), nil
}
