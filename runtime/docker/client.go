package docker

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/enginekit"
	"github.com/codebridge-mcp/codebridge/runtime/restapi"
)

// ErrUnavailable is matched (with [errors.Is]) by every error saying that
// Docker cannot be used at all: its daemon not reachable, or no usable
// image. The error's message says how to fix it.
var ErrUnavailable = confine.ErrUnavailable

// UnavailableError is an [ErrUnavailable] error with a message for the user.
type UnavailableError = confine.UnavailableError

var unavailable = confine.Unavailable

// Hints in errors, for people without a checkout.
const (
	// SetupHint is how to prepare Docker for codebridge and check it.
	SetupHint = "run codebridge setup --engine docker, which builds the sandbox image with Docker, and codebridge doctor, which checks each piece (https://github.com/codebridge-mcp/codebridge#two-commands)"
	// StartHint is how to get a Docker daemon answering.
	StartHint = "start Docker (Docker Desktop; on Linux: sudo systemctl start docker, or sudo dockerd & where there is no systemd; codebridge setup --engine docker installs and starts it) or set DOCKER_HOST to a daemon that runs"
)

// Timeouts of requests to Docker. Every request has a deadline; the caller's
// ctx may shorten it.
const (
	requestTimeout = 30 * time.Second // create, start, inspect, kill, remove, list
	pingTimeout    = 5 * time.Second  // one connection attempt
	pullTimeout    = 10 * time.Minute
)

// API versions: the client speaks the Engine API up to maxAPI and needs at
// least minAPI (Docker 19.03); it uses the older of maxAPI and the daemon's.
const (
	maxAPI = "1.43"
	minAPI = "1.40"
)

// labelClient tells the containers of two clients in one process apart.
const labelClient = "io.codebridge.client"

// Options configure [Connect].
type Options struct {
	// Host is the Docker API (unix://, tcp://, ssh://). Empty means
	// $DOCKER_HOST, else the current Docker context, else the default
	// sockets.
	Host string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Getenv reads the environment; nil means os.Getenv. Tests replace it.
	Getenv func(string) string
	// Declined, if non-nil, is told, once per connection, that a container
	// could not connect to its socket ([confine.Spec.Channel]) and talks
	// through Docker's attach stream instead, which makes its requests
	// slower: its short ID and the reason it gave. nil logs that as a
	// warning.
	Declined func(container, reason string)
}

// Client talks to one Docker daemon. Its methods are safe for concurrent
// use.
type Client struct {
	host       string // the endpoint's URI
	from       string // where the endpoint came from
	dial       func(ctx context.Context) (net.Conn, error)
	hc         *http.Client
	apiVersion string // the version the client speaks, e.g. "1.41"
	version    string // the daemon's, e.g. "20.10.24"
	desktop    bool   // Docker Desktop: its daemon runs in a VM
	runtime    string // the daemon's default OCI runtime
	log        *slog.Logger
	owner      map[string]string // ownership labels put on our containers
	self       confine.Owner     // this process

	declined enginekit.Declined // a container could not connect to its socket; told once
}

// Connect finds a Docker daemon and returns a client for it. In order it
// tries opts.Host, else $DOCKER_HOST, else the current Docker context (only
// that, when one is set), else the sockets of rootless Docker
// ($XDG_RUNTIME_DIR/docker.sock), Docker Desktop (~/.docker/run/docker.sock)
// and the system daemon (/var/run/docker.sock). Errors that mean Docker
// cannot be used match [ErrUnavailable] and say what to do.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ep, chosen, err := explicitEndpoint(opts.Host, getenv)
	if err != nil {
		return nil, err
	}
	if chosen {
		c, err := dialEndpoint(ctx, ep, log, opts.Declined)
		if err != nil {
			var u *UnavailableError
			if errors.As(err, &u) {
				return nil, err
			}
			return nil, unavailable(err, "Docker not reachable at %s (from %s): %v: %s", ep.Host, ep.from, rootCause(err), StartHint)
		}
		return c, nil
	}
	var tried []string
	for _, sock := range defaultSockets(getenv) {
		if _, err := os.Stat(sock); err != nil {
			continue
		}
		c, err := dialEndpoint(ctx, endpoint{Host: "unix://" + sock, from: "the default socket"}, log, opts.Declined)
		if err == nil {
			return c, nil
		}
		log.Debug("docker socket does not answer", "socket", sock, "err", err)
		tried = append(tried, fmt.Sprintf("%s (%v)", sock, rootCause(err)))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if len(tried) > 0 {
		return nil, unavailable(nil, "Docker does not answer at %s: %s", strings.Join(tried, ", "), StartHint)
	}
	if _, err := exec.LookPath("dockerd"); err != nil && goruntime.GOOS == "linux" {
		return nil, unavailable(nil, "Docker is not installed (no daemon socket and no dockerd): codebridge setup --engine docker installs it, or set DOCKER_HOST to a Docker daemon elsewhere")
	}
	return nil, unavailable(nil, "no Docker daemon socket found (%s): %s", strings.Join(defaultSockets(getenv), ", "), StartHint)
}

// dialEndpoint connects to ep and negotiates the API version.
func dialEndpoint(ctx context.Context, ep endpoint, log *slog.Logger, declined func(container, reason string)) (*Client, error) {
	scheme, addr, err := parseHost(ep.Host)
	if err != nil {
		return nil, unavailable(err, "%s (from %s)", err, ep.from)
	}
	self := confine.Self()
	owner := self.Labels()
	owner[labelClient] = rand.Text()[:12]
	c := &Client{host: ep.Host, from: ep.from, log: log, owner: owner, self: self, declined: enginekit.Declined{Notify: declined}}
	switch scheme {
	case "unix":
		c.dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", addr)
		}
	case "tcp":
		c.dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil || ep.TLS == nil {
				return conn, err
			}
			cfg := ep.TLS.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName, _, _ = net.SplitHostPort(addr)
			}
			tc := tls.Client(conn, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tc, nil
		}
	case "ssh":
		c.dial = func(ctx context.Context) (net.Conn, error) { return dialSSH(ctx, addr) }
	}
	c.hc = &http.Client{Transport: &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return c.dial(ctx) },
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}}
	if err := c.negotiate(ctx); err != nil {
		c.Close()
		return nil, err
	}
	log.Debug("connected to docker", "host", c.host, "api", c.apiVersion, "version", c.version)
	return c, nil
}

// negotiate asks the daemon its version and chooses the API version to
// speak, within pingTimeout.
func (c *Client) negotiate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var v struct {
		Version, APIVersion, MinAPIVersion string
		Platform                           struct{ Name string }
	}
	if err := c.get(ctx, "/version", &v); err != nil {
		return err
	}
	switch {
	case v.APIVersion == "":
		return fmt.Errorf("%s answered /version without an API version: is it a Docker daemon?", c.host)
	case versionLess(v.APIVersion, minAPI):
		return unavailable(nil, "Docker %s at %s speaks API %s; codebridge needs %s or later (Docker 19.03): upgrade Docker", v.Version, c.host, v.APIVersion, minAPI)
	case versionLess(v.APIVersion, maxAPI):
		c.apiVersion = v.APIVersion
	default:
		c.apiVersion = maxAPI
	}
	c.version = v.Version
	c.desktop = strings.Contains(v.Platform.Name, "Docker Desktop")
	var info struct {
		DefaultRuntime  string
		OperatingSystem string
	}
	if err := c.do(ctx, http.MethodGet, "/info", nil, nil, &info); err != nil {
		return err
	}
	c.runtime = info.DefaultRuntime
	c.desktop = c.desktop || strings.Contains(info.OperatingSystem, "Docker Desktop")
	return nil
}

// get asks an unversioned path (the version is not known yet).
func (c *Client) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker"+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c.api().AnswerError(http.MethodGet, path, resp)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// versionLess compares API versions such as "1.41".
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// Host is the URI of the Docker daemon this client uses.
func (c *Client) Host() string { return c.host }

// APIVersion is the Engine API version the client speaks with the daemon.
func (c *Client) APIVersion() string { return c.apiVersion }

// Version is the daemon's version, e.g. 20.10.24.
func (c *Client) Version() string { return c.version }

// Runtime is the daemon's default OCI runtime, e.g. runc.
func (c *Client) Runtime() string { return c.runtime }

// SharesFiles reports whether the daemon reads this host's files, so that a
// path here (a sandbox's socket folder) means the same file to it: a unix
// socket on Linux that is not Docker Desktop's, whose daemon runs in a VM.
func (c *Client) SharesFiles() bool {
	return goruntime.GOOS == "linux" && strings.HasPrefix(c.host, "unix://") && !c.desktop
}

// Close closes the client's idle connections.
func (c *Client) Close() error {
	if t, ok := c.hc.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return nil
}

// isStatus reports whether err is the Docker API answering with code.
func isStatus(err error, code int) bool { return restapi.IsStatus(err, code) }

// api sends c's JSON requests.
func (c *Client) api() *restapi.Client {
	return &restapi.Client{Engine: "docker", Send: c.send, ReaderType: "application/x-tar"}
}

// do is [restapi.Client.Do] with the deadline of every request,
// requestTimeout.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.api().Do(ctx, requestTimeout, method, path, query, body, out)
}

// request is [restapi.Client.Request]: a 2xx answer, whose body the caller
// closes.
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	return c.api().Request(ctx, method, path, query, body)
}

// url is the versioned URL of path.
func (c *Client) url(path string, query url.Values) string {
	u := "http://docker/v" + c.apiVersion + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// send sends one request of [Client.api] to the versioned URL of path.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body io.Reader, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, query), body)
	if err != nil {
		return nil, err
	}
	req.Header = header
	return c.hc.Do(req)
}

// attach opens a connection of its own to the daemon and upgrades it to
// container id's multiplexed stdin, stdout and stderr
// ([restapi.Client.Attach]).
func (c *Client) attach(ctx context.Context, id string) (net.Conn, *bufio.Reader, error) {
	path := "/containers/" + id + "/attach"
	q := url.Values{"stdin": {"1"}, "stdout": {"1"}, "stderr": {"1"}, "stream": {"1"}}
	return c.api().Attach(ctx, requestTimeout, c.dial, c.url(path, q), path, 64<<10)
}

// rootCause strips the wrapping of a failed request down to the part a
// user can act on, e.g. "dial unix /x: connect: no such file or directory".
func rootCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
