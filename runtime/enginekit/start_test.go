package enginekit

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codebridge-mcp/codebridge/runtime/confine"
	"github.com/codebridge-mcp/codebridge/runtime/restapi"
)

// fakeAPI is an engine's container API on a test server: POST
// /containers/create answers create, POST /containers/{id}/start answers
// start; each is a status and a body.
type fakeAPI struct {
	create, start answer

	mu    sync.Mutex // protects following
	calls []string   // the requests, "POST /containers/create"
}

type answer struct {
	code int
	body string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.RequestURI())
	f.mu.Unlock()
	a := f.start
	if r.URL.Path == "/containers/create" {
		a = f.create
	}
	w.WriteHeader(a.code)
	io.WriteString(w, a.body)
}

// client is the API's client, as a driver fills it in.
func (f *fakeAPI) client(t *testing.T) *restapi.Client {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &restapi.Client{Engine: "fake", Send: func(ctx context.Context, method, path string, query url.Values, body io.Reader, header http.Header) (*http.Response, error) {
		u := srv.URL + path
		if len(query) > 0 {
			u += "?" + query.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, method, u, body)
		if err != nil {
			return nil, err
		}
		req.Header = header
		return srv.Client().Do(req)
	}}
}

// fakeLaunched is a driver's container that counts its removals.
type fakeLaunched struct {
	id      string
	at      *confine.Attached
	removed int
}

func (c *fakeLaunched) Remove(ctx context.Context) error {
	c.removed++
	c.at.CloseStreams()
	return nil
}

// fakeRequest is a create request that records its socket.
type fakeRequest struct {
	Image string
	Env   []string
	Dir   string // the socket's folder
}

func (r *fakeRequest) AddChannel(env string, ch *confine.Channel) {
	r.Env = append(r.Env, env+"="+confine.SocketPath)
	r.Dir = ch.Dir()
}

const fakeID = "0123456789abcdef"

// TestLaunch checks that a start that fails at any step leaves nothing
// behind (the container removed, its socket's folder gone) and says where
// it failed.
func TestLaunch(t *testing.T) {
	created := answer{http.StatusCreated, `{"Id": "` + fakeID + `"}`}
	started := answer{http.StatusNoContent, ""}
	tests := []struct {
		name          string
		create, start answer
		attach        error
		beforeStart   error
		missingImage  bool   // the driver says a 404 to the create is a missing image
		want          string // the error; "" none
		wantRemoved   int
		wantCalls     int // requests to the API
	}{
		{name: "started", create: created, start: started, wantCalls: 2},
		{name: "create fails", create: answer{http.StatusInternalServerError, `{"message": "no space"}`},
			want: "creating container from img: fake POST /containers/create: no space (HTTP 500)", wantCalls: 1},
		{name: "image missing", create: answer{http.StatusNotFound, `{"message": "no such image"}`}, missingImage: true,
			want: "creating container: image img not found: fake POST /containers/create: no such image (HTTP 404)", wantCalls: 1},
		{name: "attach fails", create: created, attach: errors.New("refused"),
			want: "attaching to container 0123456789ab: refused", wantRemoved: 1, wantCalls: 1},
		{name: "before start fails", create: created, beforeStart: errors.New("waiting for container: no"),
			want: "waiting for container: no", wantRemoved: 1, wantCalls: 1},
		{name: "start fails", create: created, start: answer{http.StatusInternalServerError, `{"message": "oci runtime error"}`},
			want: "starting container 0123456789ab: fake POST /containers/" + fakeID + "/start: oci runtime error (HTTP 500)", wantRemoved: 1, wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{create: tt.create, start: tt.start}
			var ct *fakeLaunched
			l := &Launcher[*fakeLaunched]{
				Name:     "Fake",
				API:      api.client(t),
				Timeout:  time.Minute,
				Log:      slog.New(slog.DiscardHandler),
				Declined: &Declined{Notify: func(string, string) {}},
				Created: func(id string, at *confine.Attached) *fakeLaunched {
					ct = &fakeLaunched{id: id, at: at}
					return ct
				},
				Attach: func(ctx context.Context, id string) (net.Conn, *bufio.Reader, error) {
					if tt.attach != nil {
						return nil, nil, tt.attach
					}
					ours, theirs := net.Pipe()
					t.Cleanup(func() { theirs.Close() })
					return ours, bufio.NewReader(ours), nil
				},
				BeforeStart: func(context.Context, *fakeLaunched) error { return tt.beforeStart },
			}
			if tt.missingImage {
				l.MissingImage = func(err error) bool { return restapi.IsStatus(err, http.StatusNotFound) }
			}
			dir := t.TempDir()
			body := &fakeRequest{Image: "img"}
			got, err := l.Launch(t.Context(), confine.Spec{Image: "img", Channel: "SOCK"}, body, dir)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Launch: %v", err)
				}
				if got != ct || got.id != fakeID {
					t.Errorf("Launch returned %+v, want the container created, %s", got, fakeID)
				}
				defer got.Remove(t.Context())
			} else if err == nil || err.Error() != tt.want {
				t.Errorf("Launch error = %v, want %q", err, tt.want)
			}
			if body.Dir == "" || !strings.HasPrefix(body.Dir, dir) || len(body.Env) != 1 || body.Env[0] != "SOCK="+confine.SocketPath {
				t.Errorf("the create request got socket folder %q and env %q, want a folder in %s and SOCK=%s", body.Dir, body.Env, dir, confine.SocketPath)
			}
			if tt.want != "" {
				if _, err := os.Stat(body.Dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the socket's folder %s is left behind (%v)", body.Dir, err)
				}
			}
			if ct != nil && ct.removed != tt.wantRemoved {
				t.Errorf("the container was removed %d times, want %d", ct.removed, tt.wantRemoved)
			}
			if len(api.calls) != tt.wantCalls {
				t.Errorf("requests %q, want %d", api.calls, tt.wantCalls)
			}
		})
	}
}
