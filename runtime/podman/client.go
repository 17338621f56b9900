package podman

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/containers/podman/v5/pkg/bindings"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/restapi"
)

// ErrUnavailable is matched (with [errors.Is]) by every error saying that
// Podman cannot be used at all: not installed, its API not reachable, or no
// usable image. The error's message says how to fix it.
var ErrUnavailable = confine.ErrUnavailable

// UnavailableError is an [ErrUnavailable] error with a message for the user.
type UnavailableError = confine.UnavailableError

var unavailable = confine.Unavailable

// Timeouts of requests to Podman. Every request has a deadline; the caller's
// ctx may shorten it.
const (
	requestTimeout = 30 * time.Second // create, start, kill, remove
	// listTimeout bounds a list of containers: Podman takes every
	// container's lock for it, and containers exiting in numbers hold those
	// locks while their cleanup processes queue for the storage lock (over
	// 30 s seen on a loaded 2-core machine). Nothing waits on a list but the
	// background sweep and tests. An inspect of a container that has exited
	// (did it run out of memory?) and GET /info wait on the same locks.
	listTimeout    = 2 * time.Minute
	pingTimeout    = 5 * time.Second  // one connection attempt
	serviceStartup = 20 * time.Second // a spawned 'podman system service' must answer within this
	pullTimeout    = 10 * time.Minute
)

const rootfulSocket = "/run/podman/podman.sock"

// Options configure [Connect].
type Options struct {
	// URI of the Podman API (unix://, ssh://, tcp://). Empty means
	// $CONTAINER_HOST, else the default sockets, else a private service.
	URI string
	// StateDir holds the socket of a Podman service Connect starts itself.
	// Empty means $XDG_RUNTIME_DIR/codebridge, else a codebridge directory in
	// [os.TempDir].
	StateDir string
	// Logger receives progress and diagnostics; nil discards them.
	Logger *slog.Logger
	// Runtime is the OCI runtime containers must run under, as Podman names
	// it ("runsc"); "" means Podman's default. Podman runs every container
	// of an API service under the service's runtime (it ignores one asked
	// per container), so with a runtime Connect starts its own service
	// running it (podman --runtime NAME system service), unless opts.URI,
	// $CONTAINER_HOST or $CONTAINER_CONNECTION names a Podman, which must
	// then run it: another is refused.
	Runtime string
	// idle is how long a service Connect starts stays after its last
	// client; 0 means serviceIdle. Tests shorten it.
	idle time.Duration
	// Declined, if non-nil, is told, once per connection, that a container
	// could not connect to its socket ([confine.Spec.Channel]) and talks through
	// Podman's attach stream instead, which makes its requests slower: its
	// short ID and the reason it gave. nil logs that as a warning.
	Declined func(container, reason string)
}

// Client talks to one Podman API service. Its methods are safe for
// concurrent use.
type Client struct {
	conn       *bindings.Connection
	uri        string
	apiVersion string // the server's libpod API version, e.g. "4.3.1"
	log        *slog.Logger
	svc        *service      // the shared service Connect started or joined, or nil
	stopHold   chan struct{} // closed by Close: ends holdService
	closeOnce  sync.Once
	holding    sync.WaitGroup    // holdService
	owner      map[string]string // ownership labels put on our containers
	self       confine.Owner     // this process
	runtime    string            // the OCI runtime its containers run under; "" when not known (Podman's default)
	stateDir   string            // see [Options.StateDir]; "" is [enginekit.StateDir]'s default

	placeMu sync.Mutex // serializes putting the seccomp profile on a Podman host; protects following
	placed  string     // where the profile was put on a Podman host that does not share this one's files

	declined enginekit.Declined // a container could not connect to its socket; told once
}

// Connect finds a Podman API and returns a client for it. In order it tries:
// opts.URI or $CONTAINER_HOST (only that, when set), the rootless socket
// $XDG_RUNTIME_DIR/podman/podman.sock, the rootful /run/podman/podman.sock, and
// finally the 'podman system service' the codebridge processes of this user
// share, on a socket in opts.StateDir, starting it if none answers there
// (service.go). Errors that mean Podman cannot be used match
// [ErrUnavailable] and say what to do.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := newClient(log)
	c.declined.Notify = opts.Declined
	c.stateDir = opts.StateDir

	dest, err := explicitDest(ctx, opts.URI)
	if err != nil {
		return nil, err
	}
	if uri, from := dest.URI, dest.from; uri != "" {
		if err := c.dial(ctx, dest); err != nil {
			if _, lerr := exec.LookPath("podman"); lerr != nil && strings.HasPrefix(uri, "unix://") {
				return nil, unavailable(err, "podman is not installed, and nothing answers at %s (from %s): %s", uri, from, installHint)
			}
			return nil, unavailable(err, "podman API not reachable at %s (from %s): %v: start it with 'podman%s system service --time=0 %s' or fix %s",
				uri, from, rootCause(err), runtimeFlag(opts.Runtime), uri, from)
		}
		if opts.Runtime != "" {
			if err := c.checkRuntime(ctx, opts.Runtime, from); err != nil {
				c.Close()
				return nil, err
			}
		}
		return c, nil
	}

	var tried []string
	sockets := defaultSockets()
	if opts.Runtime != "" {
		// Their services run Podman's default runtime, most likely; asking
		// each would cost a slow GET /info.
		sockets = nil
	}
	for _, sock := range sockets {
		if _, err := os.Stat(sock); err != nil {
			continue
		}
		uri := "unix://" + sock
		err := c.dial(ctx, destination{URI: uri})
		if err == nil {
			return c, nil
		}
		log.Debug("podman socket does not answer", "uri", uri, "err", err)
		tried = append(tried, uri)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}

	bin, err := exec.LookPath("podman")
	if err != nil {
		msg := "podman is not installed: " + installHint
		if len(tried) > 0 {
			msg += "; sockets found but not answering: " + strings.Join(tried, ", ")
		}
		return nil, unavailable(err, "%s", msg)
	}
	svc, err := c.shareService(ctx, bin, enginekit.StateDir(opts.StateDir), opts.Runtime, cmp.Or(opts.idle, serviceIdle))
	if err != nil {
		return nil, err
	}
	c.svc = svc
	c.runtime = opts.Runtime
	c.stopHold = make(chan struct{})
	c.holding.Go(func() { c.holdService(c.stopHold) })
	return c, nil
}

// runtimeFlag is the podman flag that chooses runtime, with a leading
// space, or "".
func runtimeFlag(runtime string) string {
	if runtime == "" {
		return ""
	}
	return " --runtime " + runtime
}

// checkRuntime makes sure the Podman service c reached (the one from names)
// runs containers under runtime.
func (c *Client) checkRuntime(ctx context.Context, runtime, from string) error {
	name, path, err := c.ociRuntime(ctx)
	if err != nil {
		return unavailable(err, "cannot tell which OCI runtime the Podman at %s (from %s) runs, which MCP_BRIDGE_RUNTIME=%s needs to know: %v",
			c.uri, from, runtime, err)
	}
	if name == runtime || path == runtime || filepath.Base(path) == runtime {
		c.runtime = runtime
		return nil
	}
	return unavailable(nil, "the Podman at %s (from %s) runs containers under %s, not %s (MCP_BRIDGE_RUNTIME), and Podman runs every container of a service under the service's runtime: "+
		"start that service with 'podman --runtime %s system service --time=0 %s', or unset %s so that codebridge starts a Podman service of its own under %s",
		c.uri, from, cmp.Or(name, path, "its default runtime"), runtime, runtime, c.uri, from, runtime)
}

// ociRuntime asks the service which OCI runtime it runs containers under
// (GET /info: slow, a second on a loaded machine, and more than 30 s seen
// on one loaded with a hundred runnable tasks).
func (c *Client) ociRuntime(ctx context.Context) (name, path string, err error) {
	var info struct {
		Host struct {
			OCIRuntime struct{ Name, Path string } `json:"ociRuntime"`
		} `json:"host"`
	}
	// It reads the store, and so waits on the locks a list waits on.
	if err := c.api().Do(ctx, listTimeout, http.MethodGet, "/info", nil, nil, &info); err != nil {
		return "", "", err
	}
	return info.Host.OCIRuntime.Name, info.Host.OCIRuntime.Path, nil
}

// Runtime is the OCI runtime the client's containers run under, as asked
// ([Options.Runtime]); "" means Podman's default.
func (c *Client) Runtime() string { return c.runtime }

func newClient(log *slog.Logger) *Client {
	self := confine.Self()
	owner := self.Labels()
	owner[labelClient] = rand.Text()[:12]
	return &Client{log: log, owner: owner, self: self}
}

// destination is a Podman API to connect to.
type destination struct {
	URI      string
	Identity string // ssh key; "" means $CONTAINER_SSHKEY, else ssh's defaults
	Machine  bool   // a podman machine: its host key is not checked
	from     string // where it came from, for messages
}

// explicitDest returns the Podman the user chose, if any: the configured
// URI, else $CONTAINER_HOST, else Podman's system connection named by
// $CONTAINER_CONNECTION, else, where Podman always runs remotely (macOS,
// Windows), its default system connection (podman machine's, typically).
func explicitDest(ctx context.Context, uri string) (destination, error) {
	switch {
	case uri != "":
		return destination{URI: uri, from: "the configured URI"}, nil
	case os.Getenv("CONTAINER_HOST") != "":
		return destination{URI: os.Getenv("CONTAINER_HOST"), from: "CONTAINER_HOST"}, nil
	case os.Getenv("CONTAINER_CONNECTION") != "":
		return systemConnection(ctx, os.Getenv("CONTAINER_CONNECTION"))
	case goruntime.GOOS != "linux":
		d, err := systemConnection(ctx, "")
		if err != nil && !errors.Is(err, errNoConnection) {
			return d, err
		}
		return d, nil
	}
	return destination{}, nil
}

// errNoConnection: Podman has no default system connection.
var errNoConnection = errors.New("no default podman system connection")

// systemConnection looks up one of Podman's system connections (podman
// system connection list): the one called name, or the default when name is
// "".
func systemConnection(ctx context.Context, name string) (destination, error) {
	bin, err := exec.LookPath("podman")
	if err != nil {
		return destination{}, unavailable(err, "podman is not installed, so its system connection %q cannot be looked up: %s", name, installHint)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "system", "connection", "list", "--format", "json").Output()
	if err != nil {
		return destination{}, unavailable(err, "podman system connection list failed: %v: run it by hand to see why", rootCause(err))
	}
	var conns []struct {
		Name, URI, Identity string
		IsMachine, Default  bool
	}
	if err := json.Unmarshal(out, &conns); err != nil {
		return destination{}, unavailable(err, "podman system connection list printed what codebridge cannot read: %v", err)
	}
	var names []string
	for _, c := range conns {
		if (name == "" && c.Default) || (name != "" && c.Name == name) {
			from := "CONTAINER_CONNECTION=" + name
			if name == "" {
				from = "Podman's default system connection " + c.Name
			}
			return destination{URI: c.URI, Identity: c.Identity, Machine: c.IsMachine, from: from}, nil
		}
		names = append(names, c.Name)
	}
	if name == "" {
		return destination{}, errNoConnection
	}
	return destination{}, unavailable(nil, "CONTAINER_CONNECTION=%s: Podman has no system connection of that name (it has %s): see podman system connection list, or unset CONTAINER_CONNECTION",
		name, cmp.Or(strings.Join(names, ", "), "none"))
}

func defaultSockets() []string {
	var socks []string
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		socks = append(socks, filepath.Join(dir, "podman", "podman.sock"))
	}
	return append(socks, rootfulSocket)
}

// dial connects to d once, within pingTimeout.
func (c *Client) dial(ctx context.Context, d destination) error {
	uri := d.URI
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	cctx, err := bindings.NewConnectionWithIdentity(ctx, uri, d.Identity, d.Machine)
	if err != nil {
		return err
	}
	conn, err := bindings.GetClient(cctx)
	if err != nil {
		return err
	}
	c.conn = conn
	c.uri = uri
	c.apiVersion = bindings.ServiceVersion(cctx).String()
	if c.apiVersion == "0.0.0" {
		c.apiVersion = "4.0.0"
	}
	c.log.Debug("connected to podman", "uri", uri, "api", c.apiVersion)
	return nil
}

// dialWait connects to a service just started, retrying until it answers.
func (c *Client) dialWait(ctx context.Context, svc *service) error {
	ch := svc.child
	ctx, cancel := context.WithTimeout(ctx, serviceStartup)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if _, err := os.Stat(svc.sock); err == nil {
			if last = c.dial(ctx, destination{URI: svc.uri()}); last == nil {
				return nil
			}
		}
		select {
		case <-ch.exited:
			hint := SetupHint
			if svc.runtime != "" {
				hint = fmt.Sprintf("MCP_BRIDGE_RUNTIME=%s: codebridge setup --runtime %s installs and registers it, or unset MCP_BRIDGE_RUNTIME", svc.runtime, svc.runtime)
			}
			return unavailable(ch.waitErr, "podman system service exited at start-up: %s: run 'podman%s system service --time=0 %s' by hand to see why; %s",
				ch.diagnostics(), runtimeFlag(svc.runtime), svc.uri(), hint)
		case <-ctx.Done():
			if err := context.Cause(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return unavailable(last, "podman system service did not answer at %s within %s: %s; try 'podman system service --time=0' by hand",
				svc.uri(), serviceStartup, ch.diagnostics())
		case <-tick.C:
		}
	}
}

// URI is the address of the Podman API this client uses.
func (c *Client) URI() string { return c.uri }

// APIVersion is the Podman API version the service reports, e.g. 4.3.1.
func (c *Client) APIVersion() string { return c.apiVersion }

// Private reports whether the Podman service is the one codebridge
// processes start and share, rather than one the user runs.
func (c *Client) Private() bool { return c.svc != nil }

// Close closes c's connections. A shared service stays for others, and
// exits once nobody has used it for a while. Containers are not touched.
func (c *Client) Close() error {
	if c.svc != nil {
		c.closeOnce.Do(func() { close(c.stopHold) })
		c.holding.Wait()
	}
	if t, ok := c.conn.Client.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return nil
}

// isStatus reports whether err is the Podman API answering with code.
func isStatus(err error, code int) bool { return restapi.IsStatus(err, code) }

// api sends c's JSON requests.
func (c *Client) api() *restapi.Client {
	return &restapi.Client{Engine: "podman", Send: c.send}
}

// send sends one request of [Client.api] through the bindings' connection.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body io.Reader, header http.Header) (*http.Response, error) {
	// DoRequest formats the endpoint with fmt.Sprintf: escape the escapes.
	resp, err := c.conn.DoRequest(ctx, body, method, strings.ReplaceAll(path, "%", "%%"), query, header)
	if err != nil {
		return nil, err
	}
	return resp.Response, nil
}

// rootCause strips the bindings' connection wrapping down to the part a user
// can act on, e.g. "dial unix /x: connect: no such file or directory".
func rootCause(err error) error {
	var ce bindings.ConnectError
	if errors.As(err, &ce) && ce.Err != nil {
		err = ce.Err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Present reports, without connecting, whether Podman looks usable here:
// CONTAINER_HOST or CONTAINER_CONNECTION is set, a Podman socket exists, or
// the podman command is installed (codebridge starts a service).
func Present() bool {
	if os.Getenv("CONTAINER_HOST") != "" || os.Getenv("CONTAINER_CONNECTION") != "" {
		return true
	}
	for _, sock := range defaultSockets() {
		if _, err := os.Stat(sock); err == nil {
			return true
		}
	}
	_, err := exec.LookPath("podman")
	return err == nil
}
