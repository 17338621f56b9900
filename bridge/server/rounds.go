package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/elicit"
)

// A client speaking MCP 2026-07-28 or later takes no requests from the
// server: a question for it (an approval, a downstream server's
// elicitation, sampling or roots request) is an input request in the result
// of the run_python call that asked it (input_required), and the client
// answers by calling run_python again with the answers and the result's
// requestState. The run goes on meanwhile in the background, waiting for the
// answer; requestState names it, is unguessable, is used once, and is
// honoured only in the MCP session that started the run, or, for a client
// without one (sessionless HTTP), only for the principal that started it.
//
// go-sdk's server middleware would also turn such a result into requests
// of the server's own for older clients, but it calls the handler again
// only once, and a run may ask many questions: older clients keep being
// asked directly (bridge/elicit).

// inbox is one run's questions on their way to its client: an
// [elicit.Route].
type inbox struct {
	asks chan *question // to whoever waits on the run's call
}

// question is one input request and where its answer goes.
type question struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse // buffered: the answer never waits
	gone   chan struct{}          // closed when the run stopped waiting for the answer
}

func newInbox() *inbox { return &inbox{asks: make(chan *question)} }

// ask puts r to the client through the run's call and waits for the answer,
// or for ctx (the run's time limit) to end.
func (b *inbox) ask(ctx context.Context, r mcp.InputRequest) (mcp.InputResponse, error) {
	q := &question{req: r, answer: make(chan mcp.InputResponse, 1), gone: make(chan struct{})}
	defer close(q.gone)
	select {
	case b.asks <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-q.answer:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// errWrongAnswer is an answer of another kind than the question's.
var errWrongAnswer = errors.New("the agent's client answered an input request with a response of another kind")

// answerOf puts r to the client through b and returns the answer as a T.
func answerOf[T mcp.InputResponse](ctx context.Context, b *inbox, kind string, r mcp.InputRequest) (T, error) {
	var zero T
	a, err := b.ask(ctx, r)
	if err != nil {
		return zero, err
	}
	if t, ok := a.(T); ok {
		return t, nil
	}
	return zero, fmt.Errorf("%s: %w (%T)", kind, errWrongAnswer, a)
}

// Elicit implements [elicit.Route].
func (b *inbox) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return answerOf[*mcp.ElicitResult](ctx, b, "elicitation", p)
}

// CreateMessage implements [elicit.Route].
func (b *inbox) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	a, err := b.ask(ctx, p)
	if err != nil {
		return nil, err
	}
	switch r := a.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		// The SDK reads every sampling answer as the form with tools.
		if len(r.Content) != 1 {
			return nil, fmt.Errorf("sampling: the agent's client answered with %d content blocks, want one", len(r.Content))
		}
		return &mcp.CreateMessageResult{Meta: r.Meta, Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
	}
	return nil, fmt.Errorf("sampling: %w (%T)", errWrongAnswer, a)
}

// ListRoots implements [elicit.Route].
func (b *inbox) ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	return answerOf[*mcp.ListRootsResult](ctx, b, "roots", p)
}

var _ elicit.Route = (*inbox)(nil)

// suspended is a run whose call went back to its client with questions.
type suspended struct {
	ss     *mcp.ServerSession // the only session that may resume it; nil for a sessionless client
	owner  string             // the principal that may resume it, when ss is nil
	inbox  *inbox
	cancel func()        // ends the run, when its client gives up the call
	done   chan struct{} // closed when the run has finished; then res, err are set
	res    *mcp.CallToolResult
	err    error

	// Read and written only by the one call waiting on the run at a time.
	pending map[string]*question // asked and not answered yet, by input request id
	next    int                  // the number of the next input request id
}

// wait waits on run r for the call ctx: its result once it has finished, or
// its questions (input_required) under a new requestState.
func (s *Server) wait(ctx context.Context, r *suspended) (*mcp.CallToolResult, error) {
	// A question the run gave up on (its time limit) is not asked again.
	for id, q := range r.pending {
		select {
		case <-q.gone:
			delete(r.pending, id)
		default:
		}
	}
	if len(r.pending) == 0 {
		select {
		case q := <-r.inbox.asks:
			r.add(q)
		case <-r.done:
			return r.res, r.err
		case <-ctx.Done():
			// The client cancelled the call: the run ends too.
			r.cancel()
			<-r.done
			return nil, ctx.Err()
		}
	}
	// Questions asked at the same time go out together.
	for more := true; more; {
		select {
		case q := <-r.inbox.asks:
			r.add(q)
		default:
			more = false
		}
	}
	reqs := make(mcp.InputRequestMap, len(r.pending))
	for id, q := range r.pending {
		reqs[id] = q.req
	}
	state := rand.Text()
	s.mu.Lock()
	s.suspended[state] = r
	s.mu.Unlock()
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}, nil
}

// heldBy reports whether req may resume r: a call of the MCP session that
// started it, or, for a run started without one, a sessionless call of the
// same principal.
func (r *suspended) heldBy(req *mcp.CallToolRequest) bool {
	if r.ss != nil {
		return r.ss == req.Session
	}
	return sessionless(req) && r.owner == principal(req)
}

func (r *suspended) add(q *question) {
	r.next++
	r.pending["q"+strconv.Itoa(r.next)] = q
}

// resume takes the run that state names for the retried call req, and
// hands it the answers; a question left unanswered is asked again. It
// returns nil for a state that is unknown, used already, of a finished run,
// or of another MCP session (or principal).
func (s *Server) resume(req *mcp.CallToolRequest) *suspended {
	s.mu.Lock()
	r := s.suspended[req.Params.RequestState]
	if r == nil || !r.heldBy(req) {
		s.mu.Unlock()
		return nil
	}
	delete(s.suspended, req.Params.RequestState)
	s.mu.Unlock()
	for id, a := range req.Params.InputResponses {
		if q := r.pending[id]; q != nil && a != nil {
			q.answer <- a
			delete(r.pending, id)
		}
	}
	return r
}

// unknownState is the result of a retry whose requestState names no run
// waiting for answers.
func unknownState() *mcp.CallToolResult {
	return inputError("requestState names no run waiting for answers: the run ended (its time limit, or the session closed), its questions were answered already, or it belongs to another MCP session or caller. Call run_python again without requestState to run the code anew.")
}

// background starts the run of req in the background for a client that is
// asked through input_required results, and waits on it. run runs the code
// with the run's questions going through ch.
func (s *Server) background(ctx context.Context, req *mcp.CallToolRequest, run func(ctx context.Context, ch elicit.Route) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	// The run outlives this call when it asks: its own time limit, the
	// client cancelling a call waiting on it, or the server quitting end it.
	s.mu.Lock()
	if s.quitting {
		// Close may be waiting for bg already: the run is refused in the foreground.
		s.mu.Unlock()
		return run(ctx, nil)
	}
	s.bg.Add(1)
	s.mu.Unlock()
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &suspended{ss: req.Session, inbox: newInbox(), cancel: cancel, done: make(chan struct{}), pending: map[string]*question{}}
	if sessionless(req) {
		// Its MCP session ends with this request: a later request of the
		// same principal answers.
		r.ss, r.owner = nil, principal(req)
	}
	go func() {
		defer s.bg.Done()
		defer cancel()
		r.res, r.err = run(rctx, r.inbox)
		s.mu.Lock()
		for state, x := range s.suspended {
			if x == r {
				delete(s.suspended, state)
			}
		}
		s.mu.Unlock()
		close(r.done)
	}()
	return s.wait(ctx, r)
}

// endSuspended ends the runs of ss still waiting for answers: its session is over.
func (s *Server) endSuspended(ss *mcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for state, r := range s.suspended {
		if r.ss == ss {
			delete(s.suspended, state)
			r.cancel()
		}
	}
}
