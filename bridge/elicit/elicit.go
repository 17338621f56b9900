package elicit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Asker puts a question to the person: *mcp.ServerSession in production.
type Asker interface {
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
}

// ForClient returns the session of ss's client. It cannot ask when the
// client did not declare form elicitation at initialize. A client speaking
// MCP 2026-07-28 or later ([MultiRoundTrip]) takes no requests from the
// server: its questions must go through each run's tool call
// (input_required results), so each run asks through [Session.Via].
//
// The session also passes through to the client what downstream servers
// ask of it, as far as the client declared it ([Passthrough]).
func ForClient(ss *mcp.ServerSession) *Session {
	s := confirmsFor(ss)
	s.pass = passthrough(ss)
	if s.turn == nil {
		s.turn = make(chan struct{}, 1)
	}
	return s
}

// confirmsFor is the session of ss's client for confirmations.
func confirmsFor(ss *mcp.ServerSession) *Session {
	ip := ss.InitializeParams()
	switch {
	case ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil:
		return NewSession(nil)
	// A client that names neither mode supports form, as before modes existed.
	case ip.Capabilities.Elicitation.Form == nil && ip.Capabilities.Elicitation.URL != nil:
		return cannotAsk("it declared MCP elicitation in URL mode only, and the question is a form")
	}
	return NewSession(ss)
}

// multiRoundTrip is the first MCP version in which a server may not send
// requests of its own while it serves a tool call.
const multiRoundTrip = "2026-07-28"

// MultiRoundTrip reports whether ss's client speaks MCP 2026-07-28 or later,
// where a server asks it questions only through a tool call's result
// (input_required), which the client answers by calling the tool again.
func MultiRoundTrip(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= multiRoundTrip
}

// Route carries every kind of question to the client, each as an
// [mcp.InputRequest] (elicitation, sampling, roots): one run's tool call
// (bridge/server) for a client speaking MCP 2026-07-28 or later.
type Route interface {
	Asker
	Sampler
	RootsLister
}

// Via returns s for one run whose questions go through ch instead of
// requests of the server's own: what the client declared, the one question
// at a time and what was allowed for the session stay shared with s.
func (s *Session) Via(ch Route) *Session {
	if s == nil {
		return nil
	}
	v := *s
	if v.asker != nil {
		v.asker = ch
	}
	if v.pass.Elicit != nil {
		v.pass.Elicit = ch
	}
	if v.pass.Sampling != nil {
		v.pass.Sampling = ch
	}
	if v.pass.Roots != nil {
		v.pass.Roots = ch
	}
	if v.pass.URL != nil {
		v.pass.URL = urlVia{Asker: ch, done: v.pass.URL}
	}
	return &v
}

// Session is the questions of one MCP session: its client's asker, one
// question at a time, and the calls allowed for the rest of the session.
type Session struct {
	id     string      // names the MCP session; shared by its runs' copies (Via)
	asker  Asker       // nil when the client cannot be asked
	cannot string      // why not, then
	pass   Passthrough // what downstream servers' requests may reach
	// turn is held by the one question being asked; allowed is read and
	// written only by whoever holds it.
	turn    chan struct{}
	allowed map[[2]string]bool // server, tool → allowed for the session
}

// NewSession returns the session of a client asked through a; with a nil
// a, of a client that did not declare the elicitation capability.
func NewSession(a Asker) *Session {
	if a == nil {
		return cannotAsk(noCapability)
	}
	return &Session{id: rand.Text(), asker: a, turn: make(chan struct{}, 1), allowed: map[[2]string]bool{}}
}

// cannotAsk is the session of a client that cannot be asked, for reason.
func cannotAsk(reason string) *Session { return &Session{id: rand.Text(), cannot: reason} }

// Principal names the MCP session: the same for the copies of s made for
// its runs ([Session.Via]), never that of another session. It lets a
// downstream server's requests reach only the MCP session whose calls it
// serves (bridge/pool).
func (s *Session) Principal() string {
	if s == nil {
		return ""
	}
	return s.id
}

// noCapability is why a client that did not declare elicitation cannot be asked.
const noCapability = "it did not declare the MCP elicitation capability"

// ErrCannotAsk is returned when the client cannot be asked.
var ErrCannotAsk = errors.New("the agent's client cannot be asked")

// CanAsk reports whether the session's client can be asked. A nil session cannot.
func (s *Session) CanAsk() bool { return s != nil && s.asker != nil }

// WhyNot says why the session's client cannot be asked ("it did not
// declare ..."), or "" when it can.
func (s *Session) WhyNot() string {
	switch {
	case s == nil:
		return noCapability
	case s.asker == nil:
		return s.cannot
	}
	return ""
}

// Elicit puts p to the person once no other question of the session is
// waiting, and returns their answer; ctx bounds the wait and the question.
func (s *Session) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if !s.CanAsk() {
		return nil, fmt.Errorf("%w: %s", ErrCannotAsk, s.WhyNot())
	}
	if err := s.take(ctx); err != nil {
		return nil, err
	}
	defer s.give()
	return s.asker.Elicit(ctx, p)
}

func (s *Session) take(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) give() { <-s.turn }

// Answer is what the person said to a confirmation, as the audit records it.
type Answer string

const (
	AllowOnce    Answer = "allow once"             // run this call
	AllowSession Answer = "allow for this session" // run it and, without asking, later calls of the tool
	Remembered   Answer = "remembered"             // allowed for the session earlier: not asked
	Decline      Answer = "decline"                // declined, or accepted the form with decline
	Cancel       Answer = "cancel"                 // dismissed the question
	NoAnswer     Answer = "no answer"              // the run ended (its time limit) before an answer
	CannotAsk    Answer = "cannot ask"             // the client cannot be asked
	NotAsked     Answer = "not asked"              // the arguments cannot be shown ([ErrCannotShow])
)

// Allowed reports whether a lets the call run.
func (a Answer) Allowed() bool { return a == AllowOnce || a == AllowSession || a == Remembered }

// decisionKey is the one field of the confirmation form.
const decisionKey = "decision"

// decisionSchema is the form of a question: one required choice, a string
// enum, as MCP 2025-11-25 allows in form mode, described by description.
func decisionSchema(description string, choices ...Answer) map[string]any {
	enum := make([]string, len(choices))
	for i, c := range choices {
		enum[i] = string(c)
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			decisionKey: map[string]any{"type": "string", "title": "Decision", "description": description, "enum": enum},
		},
		"required": []string{decisionKey},
	}
}

// confirmSchema is the form of a confirmation.
var confirmSchema = decisionSchema("Allow this call once, allow every call of this tool for the rest of the session, or decline it.",
	AllowOnce, AllowSession, Decline)

// Confirm asks whether server's tool may be called with args, saying why
// it asks (a policy rule), unless the person allowed the tool for the
// session already. args must be as [Canonical] returns them: the question
// shows them (whole, or every top-level key with its value cut to fit),
// and the caller sends them as they are, so what the person approves is
// what the server gets. The answer is [CannotAsk] for a client that cannot
// be asked and [NoAnswer] when ctx ends first; err is a failure to ask, and
// wraps [ErrCannotShow] (with [NotAsked]) when the arguments are not
// canonical or too many keys to show.
func (s *Session) Confirm(ctx context.Context, server, tool string, args json.RawMessage, why string) (Answer, error) {
	if !s.CanAsk() {
		return CannotAsk, nil
	}
	if c, err := Canonical(args); err != nil {
		return NotAsked, err
	} else if !bytes.Equal(c, args) {
		return NotAsked, fmt.Errorf("%w: they are not in canonical form (elicit.Canonical)", ErrCannotShow)
	}
	// One question at a time, so a second call of a tool waits for the first
	// answer and does not ask again when that allowed the session.
	if err := s.take(ctx); err != nil {
		return NoAnswer, nil
	}
	defer s.give()
	key := [2]string{server, tool}
	if s.allowed[key] {
		return Remembered, nil
	}
	shown, err := showArgs(args, maxShown)
	if err != nil {
		return NotAsked, err
	}
	if strings.HasPrefix(shown, "\n") {
		shown = "(each value cut to fit where it ends in " + cutMark + "; the call sends them whole):" + shown
	}
	res, err := s.asker.Elicit(ctx, &mcp.ElicitParams{
		Mode: "form",
		Message: fmt.Sprintf("Code run by the agent wants to call tool %q of MCP server %q with arguments %s\n(codebridge asks because %s.) Allow it?",
			tool, server, shown, why),
		RequestedSchema: confirmSchema,
	})
	switch {
	case ctx.Err() != nil:
		return NoAnswer, nil
	case err != nil:
		return Decline, fmt.Errorf("asking the agent's client to confirm %s.%s: %w", server, tool, err)
	case res.Action == "cancel":
		return Cancel, nil
	case res.Action != "accept":
		return Decline, nil
	}
	switch a, _ := res.Content[decisionKey].(string); Answer(a) {
	case AllowOnce:
		return AllowOnce, nil
	case AllowSession:
		s.allowed[key] = true
		return AllowSession, nil
	}
	return Decline, nil
}

// saveSchema is the form of [Session.ConfirmSave]: save once, or decline.
var saveSchema = decisionSchema("Save this helper, or decline it.", AllowOnce, Decline)

// ConfirmSave asks whether code may save the helper name, with description
// and source, which every later session defines before its code runs; why
// says why it asks (a setting). The question shows the name and description
// as JSON strings and the source whole, each line after a gutter, what does
// not print escaped; a source over [MaxShownSource] is not asked about
// ([NotAsked], with an error wrapping [ErrCannotShow]). Each save is asked
// on its own: no answer allows later ones. The answers are those of
// [Session.Confirm] but [AllowSession].
func (s *Session) ConfirmSave(ctx context.Context, name, description, source, why string) (Answer, error) {
	if !s.CanAsk() {
		return CannotAsk, nil
	}
	shown, err := showSource(source, MaxShownSource)
	if err != nil {
		return NotAsked, err
	}
	if err := s.take(ctx); err != nil {
		return NoAnswer, nil
	}
	defer s.give()
	res, err := s.asker.Elicit(ctx, &mcp.ElicitParams{
		Mode: "form",
		Message: fmt.Sprintf("Code run by the agent wants to save a helper that every later session defines before its code runs:\n"+
			"name %s, description %s, source:%s\n(codebridge asks because %s.) Save it?", quote(name), quote(description), shown, why),
		RequestedSchema: saveSchema,
	})
	switch {
	case ctx.Err() != nil:
		return NoAnswer, nil
	case err != nil:
		return Decline, fmt.Errorf("asking the agent's client to confirm saving helper %s: %w", quote(name), err)
	case res.Action == "cancel":
		return Cancel, nil
	case res.Action != "accept":
		return Decline, nil
	}
	if a, _ := res.Content[decisionKey].(string); Answer(a) == AllowOnce {
		return AllowOnce, nil
	}
	return Decline, nil
}
