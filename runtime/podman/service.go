package podman

import (
	"bytes"
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// service is a 'podman system service' child process serving a private socket.
type service struct {
	sock    string
	runtime string // the OCI runtime it runs containers under; "" for Podman's default
	cmd     *exec.Cmd
	log     *slog.Logger
	stderr  *capBuffer
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid after exited is closed

	stopOnce sync.Once
}

// startService starts bin as an API service on a socket in dir, running
// containers under the OCI runtime named runtime ("" for Podman's default). The child gets
// its own process group (a Ctrl-C meant for us must not stop it before we
// have removed our containers) and, on Linux, SIGTERM when we die.
func startService(bin, dir, runtime string, log *slog.Logger) (*service, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, unavailable(err, "cannot create state directory for the podman socket: %v: set a writable state directory", err)
	}
	sock := filepath.Join(dir, "podman-"+strconv.Itoa(os.Getpid())+".sock")
	_ = os.Remove(sock) // a leftover of an earlier process with our pid
	s := &service{
		sock:    sock,
		runtime: runtime,
		log:     log,
		stderr:  &capBuffer{max: 16 << 10},
		exited:  make(chan struct{}),
	}
	// The service must outlive ctx (which only bounds start-up), so it is not
	// started with exec.CommandContext.
	var args []string
	if runtime != "" {
		args = []string{"--runtime", runtime}
	}
	s.cmd = exec.Command(bin, append(args, "system", "service", "--time=0", s.uri())...)
	s.cmd.Stderr = s.stderr
	s.cmd.Env = serviceEnv(os.Environ())
	// conmon inherits this directory and, with Podman 4.3, drops a file named
	// "oom" there when a container hits its memory limit: keep it out of the
	// user's working directory.
	s.cmd.Dir = dir
	s.cmd.SysProcAttr = serviceProcAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, unavailable(err, "cannot start '%s system service': %v: %s", bin, err, installHint)
	}
	log.Info("started podman API service", "pid", s.cmd.Process.Pid, "uri", s.uri(), "runtime", cmp.Or(runtime, "podman's default"))
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

func (s *service) uri() string { return "unix://" + s.sock }

func (s *service) err() error {
	select {
	case <-s.exited:
		return s.waitErr
	default:
		return nil
	}
}

// diagnostics is the end of the service's stderr, for error messages.
func (s *service) diagnostics() string {
	out := strings.TrimSpace(s.stderr.String())
	if out == "" {
		return "no output"
	}
	if i := strings.LastIndexByte(out, '\n'); i >= 0 && len(out)-i > 20 {
		out = out[i+1:] // the last line is usually the reason
	}
	return out
}

// stop terminates the service (SIGTERM, then SIGKILL after 5 s) and removes
// its socket.
func (s *service) stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(sigterm)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		_ = os.Remove(s.sock)
		s.log.Info("stopped podman API service", "pid", s.cmd.Process.Pid)
	})
}

// capBuffer keeps the first max bytes written to it and counts the rest.
type capBuffer struct {
	mu      sync.Mutex
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(p), b.max-b.buf.Len())
	b.buf.Write(p[:n])
	b.dropped += int64(len(p) - n)
	return len(p), nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped > 0 {
		return fmt.Sprintf("%s… (%d more bytes)", b.buf.String(), b.dropped)
	}
	return b.buf.String()
}

// serviceEnv drops the variables that would make the podman CLI act as a
// remote client (even an empty CONTAINER_HOST does) instead of serving.
func serviceEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CONTAINER_HOST" || k == "CONTAINER_CONNECTION" {
			continue
		}
		out = append(out, kv)
	}
	return out
}
