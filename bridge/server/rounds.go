package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

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

// suspended is a run in the background: one whose call went back to its
// client with questions, or became a task (tasks.go).
type suspended struct {
	ss     *mcp.ServerSession // the only session that may resume it; nil for a sessionless client
	owner  string             // the principal that may resume it, when ss is nil
	inbox  *inbox             // its questions, when its client is asked through results; nil: through requests
	cancel func()             // ends the run, when its client gives up the call
	done   chan struct{}      // closed when the run has finished; then res, err and ended are set
	res    *mcp.CallToolResult
	err    error
	ended  time.Time

	mu       sync.Mutex           // protects following
	pending  map[string]*question // asked and not answered yet, by input request id
	next     int                  // the number of the next input request id
	finished bool                 // the run has returned
	tasked   bool                 // the call became a task
	quiet    func()               // stops the run's progress notifications
	// cancelled is set by tasks/cancel before the run finished.
	cancelled bool
}

// asks is where the run's questions arrive; nil (never) when its client is
// asked through requests.
func (r *suspended) asks() chan *question {
	if r.inbox == nil {
		return nil
	}
	return r.inbox.asks
}

// onTask has the run call stop (which ends its progress notifications)
// when its call becomes a task, or at once if it has.
func (r *suspended) onTask(stop func()) {
	if r == nil {
		return
	}
	r.mu.Lock()
	tasked := r.tasked
	r.quiet = stop
	r.mu.Unlock()
	if tasked {
		stop()
	}
}

// route is where the run's questions go: nil for its client's requests.
func (r *suspended) route() elicit.Route {
	if r == nil || r.inbox == nil {
		return nil
	}
	return r.inbox
}

// wait waits on run r for the call req: its result once it has finished,
// its questions (input_required) under a new requestState, or, for a
// client of the tasks extension, a task once the run has taken
// [Limits.TaskAfter] (or at once if the call asked).
func (s *Server) wait(ctx context.Context, req *mcp.CallToolRequest, r *suspended) (*mcp.CallToolResult, error) {
	var timer <-chan time.Time
	ok, now, after := s.taskPlan(req)
	if ok && now {
		if err := s.toTask(req, r); err != nil {
			return nil, err
		}
	}
	if ok && after > 0 {
		t := time.NewTimer(after)
		defer t.Stop()
		timer = t.C
	}
	r.mu.Lock()
	// A question the run gave up on (its time limit) is not asked again.
	r.prune()
	n := len(r.pending)
	r.mu.Unlock()
	for n == 0 {
		select {
		case q := <-r.asks():
			r.mu.Lock()
			r.add(q)
			r.mu.Unlock()
			n = 1
		case <-r.done:
			return r.res, r.err
		case <-ctx.Done():
			// The client cancelled the call: the run ends too.
			r.cancel()
			<-r.done
			return nil, ctx.Err()
		case <-timer:
			timer = nil
			if err := s.toTask(req, r); err != nil {
				return nil, err
			}
		}
	}
	r.mu.Lock()
	// Questions asked at the same time go out together.
	for more := true; more; {
		select {
		case q := <-r.asks():
			r.add(q)
		default:
			more = false
		}
	}
	reqs := make(mcp.InputRequestMap, len(r.pending))
	for id, q := range r.pending {
		reqs[id] = q.req
	}
	r.mu.Unlock()
	state := rand.Text()
	s.mu.Lock()
	s.suspended[state] = r
	s.mu.Unlock()
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}, nil
}

// prune forgets the questions the run gave up on. The caller holds r.mu.
func (r *suspended) prune() {
	for id, q := range r.pending {
		select {
		case <-q.gone:
			delete(r.pending, id)
		default:
		}
	}
}

// answer hands the answers to their questions; an answer to a question not
// outstanding is ignored. The caller holds r.mu.
func (r *suspended) answer(answers mcp.InputResponseMap) {
	for id, a := range answers {
		if q := r.pending[id]; q != nil && a != nil {
			q.answer <- a // buffered, and each question is answered once
			delete(r.pending, id)
		}
	}
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

// add takes q as outstanding. The caller holds r.mu.
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
	r.mu.Lock()
	r.answer(req.Params.InputResponses)
	r.mu.Unlock()
	return r
}

// unknownState is the result of a retry whose requestState names no run
// waiting for answers.
func unknownState() *mcp.CallToolResult {
	return inputError("requestState names no run waiting for answers: the run ended (its time limit, or the session closed), its questions were answered already, or it belongs to another MCP session or caller. Call run_python again without requestState to run the code anew.")
}

// background starts the run of req in the background, and waits on it: for
// a client asked through input_required results (ask), whose run outlives
// the call that asked, and for a client of the tasks extension, whose run
// may become a task. run runs the code as the background run r.
func (s *Server) background(ctx context.Context, req *mcp.CallToolRequest, ask bool, run func(ctx context.Context, r *suspended) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	// The run outlives this call when it asks or becomes a task: its own
	// time limit, the client cancelling a call waiting on it (or the
	// task), or the server quitting end it.
	s.mu.Lock()
	if s.quitting {
		// Close may be waiting for bg already: the run is refused in the foreground.
		s.mu.Unlock()
		return run(ctx, nil)
	}
	s.bg.Add(1)
	s.mu.Unlock()
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &suspended{ss: req.Session, cancel: cancel, done: make(chan struct{}), pending: map[string]*question{}}
	if ask {
		r.inbox = newInbox()
	}
	if sessionless(req) {
		// Its MCP session ends with this request: a later request of the
		// same principal answers.
		r.ss, r.owner = nil, principal(req)
	}
	go func() {
		defer s.bg.Done()
		defer cancel()
		res, err := run(rctx, r)
		s.mu.Lock()
		for state, x := range s.suspended {
			if x == r {
				delete(s.suspended, state)
			}
		}
		s.mu.Unlock()
		r.mu.Lock()
		r.res, r.err, r.ended, r.finished = res, err, time.Now(), true
		r.mu.Unlock()
		close(r.done)
	}()
	return s.wait(ctx, req, r)
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
