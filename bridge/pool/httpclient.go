package pool

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxHTTPBody bounds the body of one HTTP answer from a downstream server
// that is not an event stream: the same bound as one message over stdio or
// one event of a stream.
const MaxHTTPBody = mcp.DefaultMaxLineLength

// ErrRedirectOffOrigin is the error of a downstream HTTP server's redirect
// to another origin (scheme, host or port), which codebridge does not follow.
var ErrRedirectOffOrigin = errors.New("redirect to another origin")

// ErrBodyTooLarge is the error of a downstream HTTP answer over [MaxHTTPBody].
var ErrBodyTooLarge = fmt.Errorf("an HTTP answer from the server is over %d MiB, the limit on one message from a downstream server", MaxHTTPBody>>20)

// httpClient returns the client of the HTTP server at endpoint. Its
// configured headers go only to endpoint's origin; it follows no redirect off
// that origin (so neither those headers nor an OAuth token go elsewhere, nor
// from https to http); and each answer that is not an event stream is cut at
// [MaxHTTPBody], with [ErrBodyTooLarge], instead of being read whole.
func httpClient(endpoint string, headers map[string]string) (*http.Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf(`"url" %q is not an http or https URL`, endpoint)
	}
	home := origin(u)
	return &http.Client{
		Transport: &guardedTransport{base: http.DefaultTransport, origin: home, headers: maps.Clone(headers)},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if to := origin(req.URL); to != home {
				return fmt.Errorf("%w: the server at %s redirected to %s, which codebridge does not follow, so that the configured headers and tokens stay with %s; if the server moved, set its \"url\" to the new address", ErrRedirectOffOrigin, home, to, home)
			}
			if len(via) >= 10 {
				return fmt.Errorf("the server at %s redirected 10 times: stopped", home)
			}
			return nil
		},
	}, nil
}

// origin is u's scheme and host, lower-case, without the scheme's default
// port: two URLs of one origin share it.
func origin(u *url.URL) string {
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	switch {
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	}
	return scheme + "://" + host
}

// guardedTransport adds headers to the requests to origin and bounds the
// bodies of answers.
type guardedTransport struct {
	base    http.RoundTripper
	origin  string
	headers map[string]string
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && origin(req.URL) == t.origin {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media != "text/event-stream" {
		// An event stream is bounded per event by the SDK's reader.
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxHTTPBody}
	}
	return resp, nil
}

// cappedBody fails a read past left bytes with [ErrBodyTooLarge].
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, ErrBodyTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
