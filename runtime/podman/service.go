package podman

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
)

// When no Podman API socket answers, codebridge starts 'podman system
// service' itself. The codebridge processes of a user share one such service
// (an editor may start a codebridge per window, each a stdio server with one
// session: a service each would cost more than their containers): it listens
// on a socket in the state directory named for the Podman binary and the
// environment that configures it ([serviceKey]), so codebridge processes
// configured alike find it there and others start their own. The first
// codebridge that finds no service answering starts one, under a lock file
// next to the socket, so two starting at once start one service; a service
// that died is started again by the next codebridge that needs it. The
// service runs in its own session and exits once no client has held a
// connection to it for [serviceIdle] ('--time'): every codebridge holds one
// while it runs ([Client.holdService]), so the service ends shortly after the
// last codebridge, however that ended.

// serviceIdle is how long a shared service stays after its last client has
// gone.
const serviceIdle = 10 * time.Second

// service is the shared Podman API service a [Client] uses.
type service struct {
	sock    string
	runtime string // the OCI runtime it runs containers under; "" for Podman's default
	log     *slog.Logger
	child   *child        // the service's process, when this client started it
	gone    chan struct{} // closed once the service is known to have exited
	once    sync.Once     // closes gone
}

func (s *service) uri() string { return "unix://" + s.sock }

func (s *service) exited() {
	s.once.Do(func() { close(s.gone) })
}

// child is a service process this codebridge started.
type child struct {
	cmd     *exec.Cmd
	logPath string        // its stdout and stderr
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid after exited is closed
}

// shareService returns the service codebridge processes configured like
// this one share, running containers under the OCI runtime named runtime
// ("" for Podman's default), with c connected to it, starting it if none
// answers.
func (c *Client) shareService(ctx context.Context, bin, dir, runtime string, idle time.Duration) (*service, error) {
	if err := confine.OwnDir(dir); err != nil {
		return nil, unavailable(err, "state directory for the podman socket: %v", err)
	}
	env := serviceEnv(os.Environ())
	s := &service{sock: filepath.Join(dir, "podman-"+serviceKey(bin, runtime, idle, env)+".sock"), runtime: runtime, log: c.log, gone: make(chan struct{})}
	if c.join(ctx, s) == nil {
		return s, nil
	}
	unlock, err := lockFile(ctx, strings.TrimSuffix(s.sock, ".sock")+".lock")
	if err != nil {
		return nil, unavailable(err, "cannot take the lock that starts a podman service: %v: set a writable state directory", err)
	}
	defer unlock()
	if c.join(ctx, s) == nil { // another codebridge started it meanwhile
		return s, nil
	}
	// Nothing listens there: the socket, if any, is a dead service's (one
	// exiting idle closes its listener, which removes it, first).
	_ = os.Remove(s.sock)
	if s.child, err = startService(bin, s.sock, runtime, idle, env); err != nil {
		return nil, err
	}
	c.log.Info("started podman API service", "pid", s.child.cmd.Process.Pid, "uri", s.uri(), "idle", idle, "runtime", cmp.Or(runtime, "podman's default"))
	go func() {
		<-s.child.exited
		s.exited()
	}()
	if err := c.dialWait(ctx, s); err != nil {
		_ = s.child.cmd.Process.Kill()
		return nil, err
	}
	return s, nil
}

// join connects c to the service at s.sock if one answers there.
// A socket that is not this user's (or root's) is refused before anything
// is sent to it: whoever owns it would receive every run's code.
func (c *Client) join(ctx context.Context, s *service) error {
	info, err := os.Lstat(s.sock)
	if err != nil {
		return err
	}
	if err := socketOwned(s.sock, info); err != nil {
		return unavailable(err, "%v", err)
	}
	if err := c.dial(ctx, destination{URI: s.uri()}); err != nil {
		c.log.Debug("no podman service answers at the shared socket", "uri", s.uri(), "err", err)
		return err
	}
	c.log.Debug("using the shared podman API service", "uri", s.uri())
	return nil
}

// startService starts bin as an API service on sock, running containers
// under the OCI runtime named runtime ("" for Podman's default), that exits
// after idle without clients. It gets its own session (it serves other codebridge
// processes too: a Ctrl-C or a hangup meant for this one must not stop it)
// and writes its output to a file next to the socket.
func startService(bin, sock, runtime string, idle time.Duration, env []string) (*child, error) {
	ch := &child{logPath: strings.TrimSuffix(sock, ".sock") + ".log", exited: make(chan struct{})}
	out, err := os.OpenFile(ch.logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, unavailable(err, "cannot create the podman service's log: %v: set a writable state directory", err)
	}
	defer out.Close()
	var args []string
	if runtime != "" {
		args = []string{"--runtime", runtime}
	}
	ch.cmd = exec.Command(bin, append(args, "system", "service", "--time="+strconv.Itoa(int(idle.Seconds())), "unix://"+sock)...)
	ch.cmd.Stdout, ch.cmd.Stderr = out, out
	ch.cmd.Env = env
	// conmon inherits this directory and, with Podman 4.3, drops a file named
	// "oom" there when a container hits its memory limit: keep it out of the
	// user's working directory.
	ch.cmd.Dir = filepath.Dir(sock)
	ch.cmd.SysProcAttr = serviceProcAttr()
	if err := ch.cmd.Start(); err != nil {
		return nil, unavailable(err, "cannot start '%s system service': %v: %s", bin, err, installHint)
	}
	go func() {
		ch.waitErr = ch.cmd.Wait()
		close(ch.exited)
	}()
	return ch, nil
}

// diagnostics is the end of the service's output, for error messages.
func (ch *child) diagnostics() string {
	data, _ := os.ReadFile(ch.logPath)
	out := strings.TrimSpace(string(data[max(0, len(data)-16<<10):]))
	if out == "" {
		return "no output"
	}
	if i := strings.LastIndexByte(out, '\n'); i >= 0 && len(out)-i > 20 {
		out = out[i+1:] // the last line is usually the reason
	}
	return out
}

// holdPeriod is how often a client pings its shared service: it keeps its
// connection to the service open (the service exits only once no client
// holds one, and closes connections idle for twice its idle time) and finds
// out when the service has gone.
const holdPeriod = serviceIdle / 2

// holdService pings c's shared service every holdPeriod until stop is
// closed, and marks it gone when nothing listens on its socket any more.
func (c *Client) holdService(stop <-chan struct{}) {
	t := time.NewTicker(holdPeriod)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-c.svc.gone:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		err := c.api().Do(ctx, pingTimeout, "GET", "/_ping", nil, nil, nil)
		cancel()
		// A slow answer is not a dead service: only a socket nobody
		// listens on is.
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			c.log.Warn("the shared podman service has gone; the next run starts another", "uri", c.svc.uri(), "err", err)
			c.svc.exited()
			return
		}
	}
}

// serviceKey names the service of this Podman binary, OCI runtime, idle
// time and environment: codebridge processes whose Podman would be
// configured differently (another storage, containers.conf, runtime) do not
// share.
func serviceKey(bin, runtime string, idle time.Duration, env []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", bin, runtime, idle)
	var keep []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CONTAINERS_") || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "REGISTRY_") ||
			k == "HOME" || k == "PATH" || k == "TMPDIR" {
			keep = append(keep, kv)
		}
	}
	slices.Sort(keep)
	for _, kv := range keep {
		fmt.Fprintf(h, "%s\x00", kv)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
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

// socketOwned checks that info, sock's Lstat, is a socket that belongs to
// this user or to root (on Unix; elsewhere it cannot tell).
func socketOwned(sock string, info os.FileInfo) error {
	owner, ok := confine.FileOwner(info)
	if !ok {
		return nil
	}
	if info.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s is not a socket (mode %v): remove it, and check who else writes to its folder", sock, info.Mode())
	}
	if uid := os.Getuid(); owner != uid && owner != 0 {
		return fmt.Errorf("refusing the podman service socket %s: it belongs to uid %d, not to this user (uid %d), and its owner could read and change every run: remove it and check who else writes to its folder", sock, owner, uid)
	}
	return nil
}
