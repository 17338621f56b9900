package python

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

//go:embed sandbox/*.py sandbox/mcp/*.py sandbox/mcp/servers/*.py
var sandboxFS embed.FS

// bootstrap is the program Command passes to python3 -c.
var bootstrap = mustRead("sandbox/bootstrap.py")

// sandboxFiles are the modules sent in every start frame, by path under sandbox/.
var sandboxFiles = func() map[string]string {
	files := map[string]string{}
	err := fs.WalkDir(sandboxFS, "sandbox", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == "sandbox/bootstrap.py" {
			return err
		}
		files[strings.TrimPrefix(path, "sandbox/")] = mustRead(path)
		return nil
	})
	if err != nil {
		panic(err)
	}
	return files
}()

func mustRead(path string) string {
	b, err := sandboxFS.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// WaitLimitEnv names the environment variable that bounds, in seconds, how long
// the bootstrap waits for the start frame before exiting quietly. Unset or 0
// means no limit; the bootstrap also exits quietly when stdin ends first.
const WaitLimitEnv = "CODEBRIDGE_WAIT_LIMIT"

// Command is the argv a sandbox container runs. The bootstrap it contains waits
// for the 'S' frame on stdin, so a container may be started before any code is known.
func Command() []string {
	return []string{"python3", "-I", "-u", "-c", bootstrap}
}

// ErrNoExit is returned by [Exec] when the sandbox's stdout ended without an
// exit frame: the process died (killed by the memory limit, os._exit, a crash,
// or the container was removed). Result.Error is then nil; the caller knows the
// container's state and fills it in, e.g. [FailOOM] or [FailExit].
var ErrNoExit = errors.New("sandbox output ended without an exit frame")

// ErrProtocol is returned by [Exec], together with a Result.Error of kind
// [FailProtocol], when the sandbox broke the framing. The caller should kill
// the container.
var ErrProtocol = errors.New("sandbox broke the frame protocol")

// Exec drives one run over a started container's stdio: it sends the start frame,
// serves the sandbox's requests through h, collects output within p.OutputLimit,
// and returns when the exit frame arrives, stdout ends, or ctx is done. It always
// returns the Result as far as the run got; the error is ctx's or a protocol fault.
//
// Errors: ctx.Err() when ctx ended first (the caller kills the container);
// [ErrNoExit] when stdout ended without an exit frame; an error wrapping
// [ErrProtocol] on malformed frames; other read errors wrapped. Each request is
// served in its own goroutine; Exec cancels their ctx and waits for the Host
// calls before it returns. A nil h answers every request with an "internal" error. A write to stdin that a dead container never reads
// is released when the caller closes stdin or removes the container.
func Exec(ctx context.Context, stdin io.Writer, stdout io.Reader, p Program, h Host) (*Result, error) {
	began := time.Now()
	limit := p.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	out := &capped{limit: limit}
	errOut := &capped{limit: limit}
	res := &Result{}
	finish := func() *Result {
		res.Stdout, res.StdoutBytes, res.StdoutTruncated = out.result()
		res.Stderr, res.StderrBytes, res.StderrTruncated = errOut.result()
		res.Duration = time.Since(began)
		return res
	}

	runCtx, cancel := context.WithCancel(ctx)
	var calls sync.WaitGroup
	defer calls.Wait()
	defer cancel()

	start, err := json.Marshal(Start{Files: sandboxFiles, Code: p.Code, Servers: p.Servers})
	if err != nil {
		return finish(), fmt.Errorf("encoding start frame: %w", err)
	}
	w := &frameWriter{w: stdin}
	startErr := make(chan error, 1)
	go func() { startErr <- w.write(KindStart, start) }()

	type frame struct {
		kind    byte
		payload []byte
		err     error
	}
	frames := make(chan frame)
	go func() {
		fr := newFrameReader(stdout, MaxFrame)
		for {
			kind, payload, err := fr.next()
			select {
			case frames <- frame{kind, payload, err}:
			case <-runCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	// At most MaxRequests requests are served at once. Past that the loop
	// stops reading frames until one finishes, which stalls the sandbox's
	// writes: code cannot pile unbounded work onto the host.
	inFlight := make(chan struct{}, MaxRequests)
	var writeErr error
	startSent := false
	for {
		select {
		case <-ctx.Done():
			return finish(), ctx.Err()
		case err := <-startErr:
			startSent = true
			if err != nil {
				writeErr = fmt.Errorf("sending start frame: %w", err)
			}
		case f := <-frames:
			if f.err != nil {
				switch {
				case errors.Is(f.err, io.EOF), errors.Is(f.err, io.ErrUnexpectedEOF):
					if !startSent {
						// The sandbox ended before taking the start frame; say why
						// if the write has failed or fails at once.
						select {
						case err := <-startErr:
							if err != nil {
								writeErr = fmt.Errorf("sending start frame: %w", err)
							}
						case <-time.After(50 * time.Millisecond):
						}
					}
					return finish(), errors.Join(ErrNoExit, writeErr)
				case errors.Is(f.err, ErrFrameTooLarge):
					return protocolFault(finish(), f.err.Error())
				default:
					return finish(), fmt.Errorf("reading sandbox output: %w", f.err)
				}
			}
			switch f.kind {
			case KindStdout:
				out.write(f.payload)
			case KindStderr:
				errOut.write(f.payload)
			case KindRequest:
				var req Request
				if err := json.Unmarshal(f.payload, &req); err != nil {
					return protocolFault(finish(), fmt.Sprintf("malformed request frame: %v", err))
				}
				select {
				case inFlight <- struct{}{}:
				case <-ctx.Done():
					return finish(), ctx.Err()
				}
				calls.Add(1)
				go func() {
					defer calls.Done()
					defer func() { <-inFlight }()
					serve(runCtx, w, h, req)
				}()
			case KindExit:
				var x Exit
				if err := json.Unmarshal(f.payload, &x); err != nil {
					return protocolFault(finish(), fmt.Sprintf("malformed exit frame: %v", err))
				}
				res.ExitCode = x.ExitCode
				res.Error = x.Error
				return finish(), nil
			default:
				return protocolFault(finish(), fmt.Sprintf("unexpected frame kind %q", f.kind))
			}
		}
	}
}

func protocolFault(res *Result, msg string) (*Result, error) {
	res.Error = &Failure{Kind: FailProtocol, Message: "the sandbox broke the frame protocol: " + msg}
	return res, fmt.Errorf("%w: %s", ErrProtocol, msg)
}

// serve answers one request through h and writes the reply.
func serve(ctx context.Context, w *frameWriter, h Host, req Request) {
	reply := Reply{ID: req.ID}
	var result any
	err := errors.New("this run has no host to answer requests")
	if h != nil {
		result, err = h.Call(ctx, req.Method, req.Params)
	}
	if err == nil {
		reply.Result, err = json.Marshal(result)
		if err != nil {
			err = fmt.Errorf("encoding result of %s: %w", req.Method, err)
		}
	}
	if err != nil {
		reply.Result = nil
		reply.Error = replyError(err)
	}
	payload, err := json.Marshal(reply)
	if err == nil && len(payload) > MaxFrame {
		err = fmt.Errorf("reply to %s is %d bytes, more than the %d-byte frame limit", req.Method, len(payload), MaxFrame)
	}
	if err != nil {
		payload, _ = json.Marshal(Reply{ID: req.ID, Error: replyError(err)})
	}
	if ctx.Err() != nil {
		return // the run is over; nobody reads the reply
	}
	w.write(KindReply, payload) // a failed write means the sandbox is gone; Exec sees it on stdout
}

// replyError maps a Host error to the wire: errors implementing
// RPCCode() string (and optionally RPCData() any) keep their code and data;
// anything else is "internal".
func replyError(err error) *ReplyError {
	e := &ReplyError{Code: "internal", Message: err.Error()}
	var coded interface{ RPCCode() string }
	if errors.As(err, &coded) {
		e.Code = coded.RPCCode()
		var withData interface{ RPCData() any }
		if errors.As(err, &withData) {
			e.Data = withData.RPCData()
		}
	}
	return e
}

// capped keeps the head of a stream up to limit bytes and counts the rest.
type capped struct {
	limit int
	buf   []byte
	total int64
}

func (c *capped) write(p []byte) {
	c.total += int64(len(p))
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
}

// result returns the kept text as valid UTF-8, with a marker when truncated.
func (c *capped) result() (text string, total int64, truncated bool) {
	b := c.buf
	truncated = c.total > int64(len(b))
	if truncated {
		// Do not end on a partial character that was cut by the limit.
		for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRune(b[len(b)-i:]) {
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	text = strings.ToValidUTF8(string(b), "\uFFFD")
	if truncated {
		text += fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", len(b), c.total)
	}
	return text, c.total, truncated
}
