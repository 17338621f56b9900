package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codebridge-mcp/codebridge/bridge/audit"
	"github.com/codebridge-mcp/codebridge/bridge/elicit"
	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// The memory and saved-helper methods of [protocol.Handler], answered from
// the directory's store. What the store fails with reaches the sandbox
// through [host.storeError], which keeps the host's paths out of it.

// storeError is err as code may see it: the store's own errors (bad
// arguments, limits, conflicts) as they are, any other (a file system
// error, which names paths under the state directory) logged and replaced
// by a message without them.
func (h *host) storeError(op string, err error) error {
	if err == nil {
		return nil
	}
	var me *memory.Error
	if errors.As(err, &me) {
		if me.Err != nil {
			h.dir.logger.Warn("memory store", "op", op, "session", h.session, "run", h.run, "err", me.Err)
		}
		return &protocol.Error{Code: me.Code, Message: me.Msg}
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return err
	}
	h.dir.logger.Warn("memory store", "op", op, "session", h.session, "run", h.run, "err", err)
	return &protocol.Error{Code: protocol.CodeInternal, Message: op + " failed on the host (the codebridge log has the details): " +
		"ask the user to check that the state directory is writable and the disk has room"}
}

// MemorySave implements [protocol.Handler].
func (h *host) MemorySave(_ context.Context, p protocol.MemorySaveParams) (protocol.NoResult, error) {
	st, err := h.store()
	if err != nil {
		return protocol.NoResult{}, err
	}
	start := time.Now()
	if p.IfRev != nil {
		err = st.SaveIf(p.Key, p.Value, p.Metadata, *p.IfRev)
	} else {
		err = st.Save(p.Key, p.Value, p.Metadata)
	}
	err = h.storeError("save_memory", err)
	h.audited(start, audit.KindMemorySave, p.Key, p.Value, "", err)
	return protocol.NoResult{}, err
}

// MemoryLoad implements [protocol.Handler].
func (h *host) MemoryLoad(_ context.Context, p protocol.KeyParams) (protocol.MemoryLoadResult, error) {
	st, err := h.store()
	if err != nil {
		return protocol.MemoryLoadResult{}, err
	}
	m, ok, err := st.Load(p.Key)
	if !ok || err != nil {
		return protocol.MemoryLoadResult{}, h.storeError("load_memory", err)
	}
	return protocol.MemoryLoadResult{Found: true, MemoryInfo: memoryInfo(m), Value: m.Value, Rev: m.Rev}, nil
}

// MemoryDelete implements [protocol.Handler].
func (h *host) MemoryDelete(_ context.Context, p protocol.KeyParams) (protocol.Found, error) {
	start := time.Now()
	found, err := h.found("delete_memory", func(st *memory.Store) (bool, error) { return st.Delete(p.Key) })
	h.audited(start, audit.KindMemoryDelete, p.Key, nil, "", err)
	return found, err
}

// MemoryExists implements [protocol.Handler].
func (h *host) MemoryExists(_ context.Context, p protocol.KeyParams) (protocol.Found, error) {
	return h.found("memory_exists", func(st *memory.Store) (bool, error) { return st.Exists(p.Key) })
}

// MemoryList implements [protocol.Handler].
func (h *host) MemoryList(context.Context, protocol.NoParams) (protocol.MemoryList, error) {
	return listed(h, "list_memories", (*memory.Store).List, memoryInfo)
}

// ToolSave implements [protocol.Handler]. With confirm_save_tool, the
// person is asked first ([host.askSave]).
func (h *host) ToolSave(ctx context.Context, p protocol.ToolSaveParams) (protocol.NoResult, error) {
	st, err := h.store()
	if err != nil {
		return protocol.NoResult{}, err
	}
	start := time.Now()
	var answer elicit.Answer
	if h.dir.confirmSave {
		answer, err = h.askSave(ctx, p)
	}
	if err == nil {
		err = h.storeError("save_tool", st.SaveTool(memory.Tool{Name: p.Name, Source: p.Source, Description: p.Description, Signature: p.Signature}))
	}
	source, _ := json.Marshal(p.Source)
	h.audited(start, audit.KindToolSave, p.Name, source, string(answer), err)
	return protocol.NoResult{}, err
}

// confirmSaveWhy is why a save of a helper asks the person.
func (h *host) confirmSaveWhy() string {
	return "the setting confirm_save_tool (" + settingOf(h.dir.setting, "confirm_save_tool") + ") is on: a saved helper runs in every later session"
}

// askSave asks the person whether code may save helper p, once the store
// would take it, and returns their answer and, unless they allowed it, the
// refusal code gets.
func (h *host) askSave(ctx context.Context, p protocol.ToolSaveParams) (elicit.Answer, error) {
	if err := memory.CheckTool(p.Name, p.Source); err != nil {
		return elicit.NotAsked, h.storeError("save_tool", err)
	}
	actx, cancel := h.questionContext(ctx)
	answer, err := h.ask.ConfirmSave(actx, p.Name, p.Description, p.Source, h.confirmSaveWhy())
	cancel()
	what := fmt.Sprintf("saving helper %q", p.Name)
	if errors.Is(err, elicit.ErrCannotShow) {
		return answer, &protocol.Error{Code: protocol.CodeTooLarge, Message: fmt.Sprintf(
			"%s needs the person's approval (%s), and %v: save a shorter helper (split it into several), or the user can turn confirm_save_tool off", what, h.confirmSaveWhy(), err)}
	}
	if answer.Allowed() {
		return answer, nil
	}
	return answer, declined(what, h.confirmSaveWhy(), "To save helpers, the user can turn confirm_save_tool off", answer, h.ask.WhyNot(), err)
}

// ToolList implements [protocol.Handler].
func (h *host) ToolList(context.Context, protocol.NoParams) (protocol.SavedTools, error) {
	return listed(h, "list_saved_tools", (*memory.Store).Tools, func(t memory.Tool) protocol.SavedToolInfo {
		return protocol.SavedToolInfo{Name: t.Name, Description: t.Description, Signature: t.Signature, UpdatedAt: epoch(t.Updated)}
	})
}

// ToolDelete implements [protocol.Handler].
func (h *host) ToolDelete(_ context.Context, p protocol.NameParams) (protocol.Found, error) {
	start := time.Now()
	found, err := h.found("delete_saved_tool", func(st *memory.Store) (bool, error) { return st.DeleteTool(p.Name) })
	h.audited(start, audit.KindToolDelete, p.Name, nil, "", err)
	return found, err
}

// audited records a change to the store (kind, of the memory or helper
// name) that began at start; args is the value or source (as JSON), kept
// when the audit keeps contents, and err is what code got.
func (h *host) audited(start time.Time, kind, name string, args json.RawMessage, confirm string, err error) {
	if h.dir.audit == nil {
		return
	}
	rec := audit.Record{Time: start, Session: h.session, Run: h.run, Tool: name, Kind: kind, Confirm: confirm,
		ArgBytes: len(args), DurationMS: float64(time.Since(start).Microseconds()) / 1000, Outcome: audit.OutcomeOK}
	if err != nil {
		rec.Outcome, rec.Error = string(protocol.CodeOf(err)), err.Error()
	}
	if h.dir.audit.Contents() && json.Valid(args) {
		rec.Arguments = args
	}
	h.dir.audit.Record(rec)
}

// found asks the store whether something is there (or was, before a delete).
func (h *host) found(op string, ask func(*memory.Store) (bool, error)) (protocol.Found, error) {
	st, err := h.store()
	if err != nil {
		return false, err
	}
	ok, err := ask(st)
	return protocol.Found(ok), h.storeError(op, err)
}

// listed is what the store lists, each converted for the sandbox; with what
// it could read when it also returns an error.
func listed[T, R any](h *host, op string, list func(*memory.Store) ([]T, error), conv func(T) R) ([]R, error) {
	st, err := h.store()
	if err != nil {
		return nil, err
	}
	items, err := list(st)
	out := make([]R, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	return out, h.storeError(op, err)
}
