package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codebridge-mcp/codebridge/bridge/tasks"
)

// Tasks (MCP's tasks extension, io.modelcontextprotocol/tasks). A client
// that declares the extension on its request (or, before MCP 2026-07-28,
// in its initialize) may get a task handle instead of run_python's result:
// at once when the call's _meta asks (metaTask), or once the run has taken
// [Limits.TaskAfter]. The run goes on in the background as a run whose
// client is asked through input_required results does (rounds.go); the
// client polls tasks/get for its state, sees its questions there
// (input_required) and answers them with tasks/update, and stops it with
// tasks/cancel, which interrupts the code in its sandbox. A task is visible
// only to the principal that started it; bridge/tasks bounds how many are
// kept and forgets each its ttl after it ends. A client without the
// extension is never handed a task.
//
// go-sdk has no tasks of its own: the three methods are registered as
// custom methods (so that its transports accept them) and answered by a
// receiving middleware, which alone sees the request's token identity; the
// same middleware turns a run_python call that became a task (the handler
// returns a [taskCreated] error) into the extension's CreateTaskResult.

// metaTask is the _meta key with which a call asks for a task handle at
// once (the extension leaves the choice to the server; this is codebridge's
// way to be asked).
const metaTask = "codebridge/task"

// taskCreated is what run_python's handler returns when its call became a
// task: the middleware answers the call with the result it holds.
type taskCreated struct{ res *tasks.CreateResult }

func (*taskCreated) Error() string { return "the call became a task" }

// registerTasks declares the extension and answers its methods on srv.
func (s *Server) registerTasks(srv *mcp.Server) {
	unreachable := func(context.Context, *mcp.ServerSession, *tasks.GetParams) (*tasks.AckResult, error) {
		return nil, errors.New("tasks are answered by codebridge's middleware")
	}
	for _, m := range []string{tasks.MethodGet, tasks.MethodCancel} {
		if err := mcp.AddReceivingCustomMethod(srv, m, unreachable); err != nil {
			panic(err) // not a standard method: cannot fail
		}
	}
	if err := mcp.AddReceivingCustomMethod(srv, tasks.MethodUpdate, func(context.Context, *mcp.ServerSession, *tasks.UpdateParams) (*tasks.AckResult, error) {
		return nil, errors.New("tasks are answered by codebridge's middleware")
	}); err != nil {
		panic(err)
	}
	srv.AddReceivingMiddleware(s.taskMiddleware)
}

// taskMiddleware answers the extension's methods, and a call that became a
// task with its handle.
func (s *Server) taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case tasks.MethodGet, tasks.MethodCancel, tasks.MethodUpdate:
			return s.taskMethod(method, req)
		}
		res, err := next(ctx, method, req)
		if tc, ok := errors.AsType[*taskCreated](err); ok {
			return tc.res, nil
		}
		return res, err
	}
}

// taskMethod answers tasks/get, tasks/update or tasks/cancel.
func (s *Server) taskMethod(method string, req mcp.Request) (mcp.Result, error) {
	var (
		id      string
		answers mcp.InputResponseMap
		caps    *mcp.ClientCapabilities
	)
	switch r := req.(type) {
	case *mcp.ServerRequest[*tasks.GetParams]:
		if r.Params != nil {
			id = r.Params.TaskID
		}
		caps = r.ClientCapabilities()
	case *mcp.ServerRequest[*tasks.UpdateParams]:
		if r.Params != nil {
			id, answers = r.Params.TaskID, r.Params.InputResponses
		}
		caps = r.ClientCapabilities()
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: unexpected request %T", method, req)}
	}
	if !hasTasks(caps) {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasks.Extension: map[string]any{}}}})
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
			Message: fmt.Sprintf("Missing required client capability: %s needs the %s extension in the request's client capabilities", method, tasks.Extension), Data: data}
	}
	if id == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": taskId is required"}
	}
	extra := req.GetExtra()
	if extra != nil && extra.Header != nil {
		if name := extra.Header.Get("Mcp-Name"); name != "" && name != id {
			return nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match params.taskId", name)}
		}
	}
	owner := principalOf(extra)
	var (
		res mcp.Result
		err error
	)
	switch method {
	case tasks.MethodGet:
		res, err = s.tasks.Get(owner, id)
	case tasks.MethodUpdate:
		res, err = tasks.Ack(), s.tasks.Update(owner, id, answers)
	case tasks.MethodCancel:
		res, err = tasks.Ack(), s.tasks.Cancel(owner, id)
	}
	if errors.Is(err, tasks.ErrNotFound) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found (it is unknown, another caller's, or ended more than " + s.setting("task_ttl") + " ago)"}
	}
	return res, err
}

// hasTasks reports whether caps declare the extension.
func hasTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[tasks.Extension]
	return ok
}

// taskPlan says whether the call req may become a task, and when: at once
// (it asked), or after the duration (0: never by time).
func (s *Server) taskPlan(req *mcp.CallToolRequest) (ok, now bool, after time.Duration) {
	if !hasTasks(req.ClientCapabilities()) {
		return false, false, 0
	}
	asked, _ := req.Params.GetMeta()[metaTask].(bool)
	return asked || s.lim.TaskAfter > 0, asked, s.lim.TaskAfter
}

// toTask makes the call req, waiting on run r, a task, and returns the
// [taskCreated] error that hands it to the client; nil when the store
// holds its most tasks, all working: the call then waits on as a call.
func (s *Server) toTask(req *mcp.CallToolRequest, r *suspended) error {
	t, err := s.tasks.Create(principal(req), r)
	if err != nil {
		s.logger.Debug("a run stays a call", "err", err)
		return nil
	}
	r.mu.Lock()
	r.tasked = true
	quiet := r.quiet
	r.mu.Unlock()
	if quiet != nil {
		quiet() // tasks carry no progress
	}
	s.mu.Lock()
	for state, x := range s.suspended {
		if x == r {
			delete(s.suspended, state) // its questions are now the task's
		}
	}
	s.mu.Unlock()
	return &taskCreated{res: s.tasks.Created(t)}
}

// State implements [tasks.Job]: the run's state, with the questions it
// waits on.
func (r *suspended) State() tasks.State {
	select {
	case <-r.done:
		st := tasks.State{Ended: r.ended}
		switch {
		case r.cancelled:
			st.Status, st.Message = tasks.Cancelled, "the run was cancelled (tasks/cancel) and its code interrupted"
		case r.err != nil:
			st.Status, st.Message = tasks.Failed, "the run ended before it finished: "+r.err.Error()
			st.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: st.Message}
		default:
			st.Status, st.Result = tasks.Completed, r.res
		}
		return st
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancelled {
		return tasks.State{Status: tasks.Working, Message: "cancelling: the code is being interrupted"}
	}
	for more := r.inbox != nil; more; {
		select {
		case q := <-r.inbox.asks:
			r.add(q)
		default:
			more = false
		}
	}
	r.prune()
	if len(r.pending) == 0 {
		return tasks.State{Status: tasks.Working, Message: "the code is running"}
	}
	reqs := make(mcp.InputRequestMap, len(r.pending))
	for id, q := range r.pending {
		reqs[id] = q.req
	}
	return tasks.State{Status: tasks.InputRequired, Message: "the run waits for answers (tasks/update)", Inputs: reqs}
}

// Answer implements [tasks.Job].
func (r *suspended) Answer(answers mcp.InputResponseMap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer(answers)
}

// Cancel implements [tasks.Job]: the run's context ends, which interrupts
// its code (and kills its sandbox if the code does not stop).
func (r *suspended) Cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	r.cancelled = true
	r.cancel()
}

var _ tasks.Job = (*suspended)(nil)
