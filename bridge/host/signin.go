package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/oauth"
	"github.com/codebridge-mcp/codebridge/discovery"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// SignIn signs def in while code waits, as `codebridge login` does
// (bridge/oauth's Login), sending the person to the authorization URL with
// ask; it returns once the sign-in is saved.
type SignIn func(ctx context.Context, def *discovery.Server, ask func(ctx context.Context, authURL string) error) error

// signIns are the sign-ins in progress, at most one per server: the calls
// that need one while it runs wait for it.
type signIns struct {
	mu   sync.Mutex // protects following
	ops  map[string]*signInOp
	last map[string]time.Time // by server: when its last sign-in here succeeded
}

// A signInOp is one sign-in that callers wait for together.
type signInOp struct {
	done chan struct{} // closed when err is set
	err  error         // nil: signed in
}

// join returns the sign-in to server in progress, or a new one, which the
// caller must run (first is true) and end with finish. A request begun
// before the last sign-in to server succeeded gets that one, done.
func (s *signIns) join(server string, began time.Time) (op *signInOp, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op := s.ops[server]; op != nil {
		return op, false
	}
	if s.last[server].After(began) {
		op := &signInOp{done: make(chan struct{})}
		close(op.done)
		return op, false
	}
	if s.ops == nil {
		s.ops = map[string]*signInOp{}
	}
	op = &signInOp{done: make(chan struct{})}
	s.ops[server] = op
	return op, true
}

// finish ends op, the sign-in to server, with err.
func (s *signIns) finish(server string, op *signInOp, err error) {
	s.mu.Lock()
	delete(s.ops, server)
	if err == nil {
		if s.last == nil {
			s.last = map[string]time.Time{}
		}
		s.last[server] = time.Now()
	}
	s.mu.Unlock()
	op.err = err
	close(op.done)
}

// withSignIn makes the request do for code, and, when it fails for want of
// a sign-in to server that the run's client can take the person through,
// signs in ([host.signIn]) and makes it once more (again set). Its error is
// the sandbox's.
func withSignIn[T any](ctx context.Context, h *host, server string, do func(again bool) (T, error)) (T, error) {
	began := time.Now()
	v, err := do(false)
	if !h.needsSignIn(err) {
		return v, err
	}
	if err := h.signIn(ctx, server, began); err != nil {
		var zero T
		return zero, err
	}
	return do(true)
}

// needsSignIn reports whether err asks for a sign-in that this run's client
// can take the person through: a client that declared URL-mode elicitation
// (MCP 2025-11-25). Other clients' code gets auth_required as it is.
func (h *host) needsSignIn(err error) bool {
	return h.dir.signIn != nil && protocol.CodeOf(err) == protocol.CodeAuthRequired && h.ask.CanOpenURL()
}

// signIn signs in to the server named server, which asked for it, through
// the run's client: the person is asked (URL mode) to open the sign-in page,
// and the sign-in must end before a moment before the run's time limit. A
// sign-in to the server already in progress, for any run, is waited for and
// not asked again. It returns nil once signed in, so that the request can be
// made again; else auth_required saying why, naming `codebridge login`. The
// question and its outcome are audited. A request begun (at began) before
// a sign-in to the server succeeded is made again without asking.
func (h *host) signIn(ctx context.Context, server string, began time.Time) error {
	srv, err := h.snap.resolve(server)
	if err != nil {
		return err
	}
	op, first := h.dir.signing.join(srv.Name, began)
	if !first {
		wctx, cancel := h.questionContext(ctx)
		defer cancel()
		select {
		case <-op.done:
			return op.err
		case <-wctx.Done():
			return needSignIn(srv, "no sign-in finished within the run's time limit")
		}
	}
	ctx, span := h.dir.tracer.Start(ctx, "oauth.sign_in")
	defer span.End()
	rec := audit.Record{Kind: audit.KindSignIn, Time: time.Now(), Session: h.session, Run: h.run, Server: srv.Name}
	err = h.askSignIn(ctx, srv, &rec)
	h.dir.signing.finish(srv.Name, op, err)
	describeSignIn(span, rec, err)
	if h.dir.audit != nil {
		rec.DurationMS = float64(time.Since(rec.Time).Microseconds()) / 1000
		rec.Outcome = audit.OutcomeOK
		if err != nil {
			rec.Outcome, rec.Error = string(protocol.CodeOf(err)), err.Error()
		}
		h.dir.audit.Record(rec)
	}
	return err
}

// askSignIn runs the sign-in to srv, asking the person; rec.Confirm gets
// their answer.
func (h *host) askSignIn(ctx context.Context, srv *discovery.Server, rec *audit.Record) error {
	sctx, cancel := h.questionContext(ctx)
	defer cancel()
	// The sign-in asks from whichever goroutine its transport runs it on.
	var (
		mu     sync.Mutex
		id     string // the question's
		answer = "no answer"
	)
	ask := func(ctx context.Context, authURL string) error {
		action, eid, err := h.ask.OpenURL(ctx, srv.Name, authURL, fmt.Sprintf(
			"The agent's code called MCP server %q, which needs you to sign in. Open this page and sign in; the call goes on once you have (or run `codebridge login %s` in a terminal).",
			srv.Name, srv.Name))
		mu.Lock()
		defer mu.Unlock()
		id = eid
		switch {
		case err != nil:
			return err
		case action != "accept":
			answer = action
			return errSignInRefused
		}
		answer = action
		return nil
	}
	h.dir.logger.Info("asking the agent's client to sign in to a server", "server", srv.Name, "session", h.session)
	err := h.dir.signIn(sctx, srv, ask)
	mu.Lock()
	rec.Confirm = answer
	mu.Unlock()
	switch {
	case err == nil:
		if id != "" {
			if nerr := h.ask.Completed(ctx, id); nerr != nil {
				h.dir.logger.Warn("telling the agent's client the sign-in is over", "server", srv.Name, "err", nerr)
			}
		}
		h.dir.logger.Info("signed in through the agent's client", "server", srv.Name)
		return nil
	case rec.Confirm == "decline":
		return needSignIn(srv, "the person declined to sign in when asked")
	case rec.Confirm == "cancel":
		return needSignIn(srv, "the person dismissed the request to sign in")
	case sctx.Err() != nil:
		return needSignIn(srv, "no sign-in finished within the run's time limit")
	}
	// The error can hold what a remote server answered: the log gets it,
	// code a fixed message.
	h.dir.logger.Warn("signing in through the agent's client failed", "server", srv.Name, "err", err)
	return needSignIn(srv, "signing in through the agent's client failed; codebridge's log says why")
}

// errSignInRefused ends a sign-in the person declined or dismissed.
var errSignInRefused = errors.New("the person did not agree to sign in")

// needSignIn is auth_required for srv, saying why and naming the command.
func needSignIn(srv *discovery.Server, reason string) error {
	return &protocol.Error{Code: protocol.CodeAuthRequired, Message: srv.Secrets.Mask((&oauth.AuthRequiredError{Server: srv.Name, Reason: reason}).Error())}
}
