package python

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

//go:embed pyfiles/*.py pyfiles/mcp/*.py pyfiles/mcp/servers/*.py
var sandboxFS embed.FS

// bootstrap is the program Command passes to python3 -c.
var bootstrap = mustRead("pyfiles/bootstrap.py")

// relay is the program RelayCommand passes to python3 -c.
var relay = mustRead("pyfiles/relay.py")

// sandboxFiles are the modules sent in every start frame, by path under pyfiles/.
var sandboxFiles = func() map[string]string {
	files := map[string]string{}
	err := fs.WalkDir(sandboxFS, "pyfiles", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == "pyfiles/bootstrap.py" || path == "pyfiles/relay.py" {
			return err
		}
		files[strings.TrimPrefix(path, "pyfiles/")] = mustRead(path)
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

// ChannelEnv names the environment variable that gives the bootstrap the path
// of a unix socket to connect to for the protocol, instead of stdin and
// stdout. When the connection fails the bootstrap writes the byte 0x06 and a
// line saying why on stdout, and uses stdin and stdout (confine.Spec.Channel
// and confine.Channel are the host side).
const ChannelEnv = "CODEBRIDGE_CHANNEL"

// GVisorEnv names the environment variable that tells the sandbox, with
// "1", that it runs under gVisor: a failure from a system call gVisor lacks
// (ENOSYS) then says so.
const GVisorEnv = "CODEBRIDGE_GVISOR"

// ServeEnv names the environment variable that makes the bootstrap serve its
// stream on the abstract unix socket it names, one connection at a time, so
// the stream outlives each connection (runtime/confine's ServeFresh): a
// Kubernetes pod, reached through [RelayCommand] run in it.
const ServeEnv = "CODEBRIDGE_SERVE"

// RelayCommand is the argv, before the socket's name, of the relay an engine
// runs in a container whose bootstrap serves its stream ([ServeEnv]): it
// copies its stdin to the socket and the socket to its stdout.
func RelayCommand() []string {
	return []string{"python3", "-I", "-S", "-c", relay}
}

// ExitDelayEnv names the environment variable that tells the bootstrap how
// many seconds to wait before exiting when its socket is closed by the host
// (a codebridge shutting down or killed ends all its sandboxes at once), as
// opposed to shut down (the host ends this one sandbox and waits for it:
// exit at once). podman.EngineOptions.ExitDelay is the host side.
const ExitDelayEnv = "CODEBRIDGE_EXIT_DELAY"

// Command is the argv a sandbox container runs. The bootstrap it contains waits
// for the 'S' frame on stdin, so a container may be started before any code is known.
func Command() []string {
	return []string{"python3", "-I", "-u", "-c", bootstrap}
}

// Exec runs p once in a fresh interpreter over s and closes it: the
// single-use form of [Start] and [Interpreter.Run].
func Exec(ctx context.Context, s Stream, p Program, h Host, timeout time.Duration) (*Result, error) {
	it := Start(s, protocol.Init{}, Limits{})
	defer it.Close()
	return it.Run(ctx, p, h, timeout)
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

// take returns the text kept so far (see result) and empties c.
func (c *capped) take() string {
	if c.total == 0 {
		return ""
	}
	text, _, _ := c.result()
	c.buf, c.total = nil, 0
	return text
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

// seconds formats a duration for messages: "1 second", "2.5 seconds".
func seconds(d time.Duration) string {
	if d == time.Second {
		return "1 second"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " seconds"
}
