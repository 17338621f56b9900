package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/restapi"
)

// Deadlines of the requests to the API server. Every request has one.
const (
	requestTimeout = 30 * time.Second // a create, get, delete or list
	dialTimeout    = 10 * time.Second // connecting, TLS included
	// watchTimeout bounds one watch request; a wait longer than that
	// watches again.
	watchTimeout = 5 * time.Minute
)

// Client speaks the Kubernetes REST API with the standard library: JSON
// over HTTPS, and WebSocket streams for exec and attach ([Client.stream]).
type Client struct {
	cfg  *Config
	http *http.Client // REST: HTTP/2 where the server offers it
	// ws dials the streams: HTTP/1.1 only, which a WebSocket upgrade needs.
	ws *http.Client
}

// NewClient returns a client of the API server cfg names. It does not
// connect until used.
func NewClient(cfg *Config) *Client {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	transport := func(h2 bool) *http.Transport {
		return &http.Transport{
			DialContext:         dialer.DialContext,
			TLSClientConfig:     cfg.TLS.Clone(),
			TLSHandshakeTimeout: dialTimeout,
			ForceAttemptHTTP2:   h2,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	return &Client{
		cfg:  cfg,
		http: &http.Client{Transport: transport(true)},
		ws:   &http.Client{Transport: transport(false)},
	}
}

// Server is the API server's URL.
func (c *Client) Server() string { return c.cfg.Server }

// Close closes idle connections.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	c.ws.CloseIdleConnections()
}

// StatusError is an error status from the API server (a metav1.Status).
type StatusError struct {
	Method, Path string
	Code         int    // HTTP status
	Reason       string // e.g. NotFound, AlreadyExists, Forbidden
	Message      string
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	return fmt.Sprintf("kubernetes %s %s: %d %s", e.Method, e.Path, e.Code, msg)
}

// isStatus reports whether err is the API server answering with code.
func isStatus(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == code
}

// IsNotFound reports whether err says that the object does not exist.
func IsNotFound(err error) bool { return isStatus(err, http.StatusNotFound) }

// api sends c's JSON requests.
func (c *Client) api() *restapi.Client {
	return &restapi.Client{
		Engine: "kubernetes",
		Send:   c.send,
		// send's errors are worded: unreachable, or the credentials.
		SendError:   func(_ context.Context, _, _ string, err error) error { return err },
		StatusError: statusError,
	}
}

// send sends one request of [Client.api]: the server's URL, JSON answers asked
// for, a merge patch for PATCH, and the bearer token.
func (c *Client) send(ctx context.Context, method, path string, q url.Values, body io.Reader, header http.Header) (*http.Response, error) {
	u := c.cfg.Server + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header = header
	req.Header.Set("Accept", "application/json")
	if method == http.MethodPatch && body != nil {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	if err := c.authorize(req.Header); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.unreachable(err)
	}
	return resp, nil
}

// authorize adds the bearer token, if any.
func (c *Client) authorize(h http.Header) error {
	tok, err := c.cfg.Token()
	if err != nil {
		return fmt.Errorf("kubernetes credentials from %s: %w", c.cfg.Source, err)
	}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return nil
}

// UnavailableError is why the API server could not be reached.
type UnavailableError struct {
	Server, Source string
	Err            error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("Kubernetes API server %s (from %s) not reachable: %v; check that the cluster runs and that KUBECONFIG names it", e.Server, e.Source, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

func (c *Client) unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && (ue.Timeout() || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err // the caller's deadline, not the server's absence
	}
	return &UnavailableError{Server: c.cfg.Server, Source: c.cfg.Source, Err: err}
}

// statusError is the error of an answer whose status is not 2xx.
func statusError(method, path string, a restapi.ErrorAnswer) error {
	return &StatusError{Method: method, Path: path, Code: a.Code, Reason: a.Reason, Message: a.Message}
}

// Version is what the API server's /version reports.
type Version struct {
	GitVersion string `json:"gitVersion"` // e.g. v1.34.4
	Platform   string `json:"platform"`
}

// Version asks the API server its version.
func (c *Client) Version(ctx context.Context) (Version, error) {
	var v Version
	err := c.api().Do(ctx, requestTimeout, http.MethodGet, "/version", nil, nil, &v)
	return v, err
}
