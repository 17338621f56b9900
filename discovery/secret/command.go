package secret

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	goruntime "runtime"
	"strings"
	"time"
)

// CommandTimeout is how long [Command] waits for a command by default.
const CommandTimeout = 10 * time.Second

// MaxCommandOutput bounds what [Command] keeps of a command's stdout: a
// command that prints more fails.
const MaxCommandOutput = 64 << 10

// errTooMuchOutput ends a command that printed more than MaxCommandOutput.
var errTooMuchOutput = errors.New("too much output")

// cappedBuffer holds what is written to it, refusing writes past
// MaxCommandOutput. (Not an embedded bytes.Buffer: io.Copy would use its
// ReadFrom, past the cap.)
type cappedBuffer struct {
	buf  bytes.Buffer
	over bool // a write was refused
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > MaxCommandOutput {
		b.over = true
		return 0, errTooMuchOutput
	}
	return b.buf.Write(p)
}

// Command runs line, a command and its arguments split as a shell would split
// words (spaces separate them; '...', "..." and \ quote) but run without one,
// and returns the first line it prints on stdout as a secret. It must exit 0
// within timeout (0 means [CommandTimeout]) and print a non-empty first line.
// Its errors never hold what the command printed, which may be the secret.
func Command(ctx context.Context, line string, timeout time.Duration) (Value, error) {
	argv, err := splitWords(line, goruntime.GOOS != "windows")
	if err != nil {
		return Value{}, err
	}
	if len(argv) == 0 {
		return Value{}, errors.New("no command: write ${cmd:COMMAND ARGS}, e.g. ${cmd:pass show github/token}")
	}
	if timeout <= 0 {
		timeout = CommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = time.Second // a child holding stdout open must not outlast the timeout
	var out cappedBuffer
	cmd.Stdout = &out
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case out.over:
		return Value{}, fmt.Errorf("%s printed more than %d KiB: it must print the secret on its first line, and little else", argv[0], MaxCommandOutput>>10)
	case ctx.Err() == context.DeadlineExceeded:
		return Value{}, fmt.Errorf("%s did not finish within %s: check that it does not wait for input (a password prompt), or sign in to it first", argv[0], timeout)
	case errors.As(err, &exit):
		return Value{}, fmt.Errorf("%s failed (%s; its output is not shown, as it may hold the secret): run it by hand to see why", argv[0], exit.ProcessState)
	case err != nil:
		return Value{}, fmt.Errorf("cannot run %s: %w", argv[0], err)
	}
	first, _ := bufio.NewReader(&out.buf).ReadString('\n')
	first = strings.TrimRight(first, "\r\n")
	if first == "" {
		return Value{}, fmt.Errorf("%s printed nothing on its first line: it must print the secret", argv[0])
	}
	return New(first), nil
}

// splitWords splits s into words as a POSIX shell does, without expanding
// anything: blanks separate words; '...' quotes literally; "..." quotes with
// \ escaping \, ", $ and `; with backslash set (not on Windows, where it
// separates a path's folders), \ outside quotes escapes the next character.
func splitWords(s string, backslash bool) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case c == '\\' && backslash && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed ' in the command: close the quote")
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, errors.New(`unclosed " in the command: close the quote`)
			}
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
