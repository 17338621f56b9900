package front

import (
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP over HTTP comes in two forms, each served by its own go-sdk handler
// over the one MCP server:
//
//   - with MCP sessions (initialize, then Mcp-Session-Id on every request):
//     each keeps its own sandbox session. Their streams are resumable:
//     every event has an id and is kept in an event store (the session's
//     most recent streams, while the session lasts), each stream starts with a priming event and a retry field, so a
//     client whose connection drops mid-run reconnects with Last-Event-ID
//     and gets the run's result.
//   - sessionless (MCP 2026-07-28: no initialize, no session header; the
//     protocol version in MCP-Protocol-Version): each request is served on
//     its own, its state carried by the sandbox session's handle.

// newProtocol is the first MCP version whose requests need no MCP session.
const newProtocol = "2026-07-28"

// protocolHeader and sessionHeader are the streamable transport's headers.
const (
	protocolHeader = "Mcp-Protocol-Version"
	sessionHeader  = "Mcp-Session-Id"
)

// eventStoreBytes bounds the events kept for resuming streams, across all
// MCP sessions: past it, the session keeping the most loses its oldest.
const eventStoreBytes = 64 << 20

// streamsKept is how many streams of each MCP session (one per POST, each
// a request and its answer) keep their events for resuming: more than a
// client has in progress at once.
const streamsKept = 32

// retryAfter is the reconnection delay every event stream announces.
const retryAfter = time.Second

// mcpHandler serves /mcp: sessionless requests statelessly, the others in
// their MCP sessions, with resumable streams.
func (f *Front) mcpHandler() http.Handler {
	var sdkLogger *slog.Logger
	if f.opts.Debug {
		sdkLogger = f.logger.With("component", "mcp-http")
	}
	events := newEventStore(eventStoreBytes, streamsKept)
	server := func(r *http.Request) *mcp.Server {
		if f.lane != nil {
			if s := f.lane(r); s != nil {
				return s
			}
		}
		return f.srv.MCP()
	}
	stateful := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		SessionTimeout: f.opts.SessionIdle, Logger: sdkLogger, EventStore: events,
	})
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true, Logger: sdkLogger})
	withSessions := f.limitSessions(f.track(f.countPosts(announceRetry(stateful))))
	sessionless := f.countPosts(stateless)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get(sessionHeader) == "" && r.Header.Get(protocolHeader) >= newProtocol {
			sessionless.ServeHTTP(w, r)
			return
		}
		withSessions.ServeHTTP(w, r)
	})
}

// tracked is what the front knows of one MCP session, for choosing which to
// close at MaxMCPSessions.
type tracked struct {
	ss    *mcp.ServerSession // nil until looked up
	used  time.Time          // when it began, or a POST of it last came
	posts int                // its POST requests in progress
}

// track records when each MCP session was used and its POSTs in progress,
// and serves a request that names an older protocol version than its
// session negotiated as that version (the conformance suite's raw requests
// send 2025-03-26 on a 2025-11-25 session), so that its stream is primed
// and resumable too.
func (f *Front) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only POSTs are use, from when they come: a client's standing GET
		// stream, which it opens and reopens by itself, says nothing of
		// whether it is idle, and a POST's handler may still be returning
		// after its client has the answer and asked again elsewhere. While a
		// POST is in progress its session is not closed anyway.
		id := r.Header.Get(sessionHeader)
		post := r.Method == http.MethodPost
		if id != "" && post {
			ss := f.use(id, 1)
			if ip := initParams(ss); ip != nil {
				if v := r.Header.Get(protocolHeader); v != "" && v < ip.ProtocolVersion && ip.ProtocolVersion < newProtocol {
					r.Header.Set(protocolHeader, ip.ProtocolVersion)
				}
			}
		}
		next.ServeHTTP(w, r)
		switch {
		case r.Method == http.MethodDelete:
			f.forget(id)
		case id != "" && post:
			f.use(id, -1)
		case id == "" && w.Header().Get(sessionHeader) != "": // a new session's
			f.use(w.Header().Get(sessionHeader), 0)
		}
	})
}

// forget drops the record of the MCP session id, or, with id "", of every
// session that has ended.
func (f *Front) forget(id string) {
	live := map[string]bool{}
	if id == "" {
		for ss := range f.mcpSessions() {
			live[ss.ID()] = true
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.tracked {
		if k == id || (id == "" && !live[k]) {
			delete(f.tracked, k)
		}
	}
}

// use notes a POST of the MCP session id starting (delta 1: the session is
// used now) or ending (-1), or the session beginning (0: used now), and
// returns the session (nil when it is not open).
func (f *Front) use(id string, delta int) *mcp.ServerSession {
	f.mu.Lock()
	_, known := f.tracked[id]
	n := len(f.tracked)
	f.mu.Unlock()
	if !known && n >= 2*f.opts.MaxMCPSessions {
		f.forget("") // sessions that ended by idling out left their records
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tracked[id]
	if t == nil {
		t = &tracked{}
		f.tracked[id] = t
	}
	if delta >= 0 {
		t.used = time.Now()
	}
	t.posts += delta
	if t.ss == nil {
		for ss := range f.mcpSessions() {
			if ss.ID() == id {
				t.ss = ss
				break
			}
		}
	}
	return t.ss
}

func initParams(ss *mcp.ServerSession) *mcp.InitializeParams {
	if ss == nil {
		return nil
	}
	return ss.InitializeParams()
}

// evictIdlest closes the open MCP session used least recently that has no
// POST in progress and no run in progress or waiting for its client, to
// make room for a new one; its sandbox session stays, reachable by handle.
// It reports false when every session is busy.
func (f *Front) evictIdlest() bool {
	f.mu.Lock()
	live := map[string]*mcp.ServerSession{}
	for ss := range f.mcpSessions() {
		if id := ss.ID(); id != "" {
			live[id] = ss
		}
	}
	var victim *mcp.ServerSession
	var oldest time.Time
	for id, ss := range live {
		t := f.tracked[id]
		if t != nil && t.posts > 0 || f.srv.Busy(ss) {
			continue
		}
		var used time.Time // never seen: older than any
		if t != nil {
			used = t.used
		}
		if victim == nil || used.Before(oldest) {
			victim, oldest = ss, used
		}
	}
	for id := range f.tracked {
		if _, ok := live[id]; !ok || (victim != nil && id == victim.ID()) {
			delete(f.tracked, id)
		}
	}
	f.mu.Unlock()
	if victim == nil {
		return false
	}
	f.logger.Info("closing the MCP session used least recently to make room (MCP_BRIDGE_MAX_MCP_SESSIONS); its sandbox session stays for its handle",
		"session", victim.ID(), "idle", time.Since(oldest).Round(time.Second), "max_mcp_sessions", f.opts.MaxMCPSessions)
	f.srv.Evict(victim)
	return true
}

// announceRetry starts every event stream with a retry field, the delay
// after which a client whose stream dropped reconnects (with Last-Event-ID).
func announceRetry(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&retryWriter{ResponseWriter: w}, r)
	})
}

// retryWriter writes the retry field before an event stream's first byte.
type retryWriter struct {
	http.ResponseWriter
	started bool
}

func (w *retryWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if w.started {
		return
	}
	w.started = true
	if mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type")); code == http.StatusOK && mt == "text/event-stream" {
		io.WriteString(w.ResponseWriter, "retry: "+strconv.FormatInt(retryAfter.Milliseconds(), 10)+"\n\n")
	}
}

func (w *retryWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *retryWriter) Flush() {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
