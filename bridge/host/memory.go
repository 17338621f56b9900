package host

import (
	"context"

	"github.com/codebridge-mcp/codebridge/bridge/memory"
	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// The memory and saved-helper methods of [protocol.Handler], answered from
// the directory's store.

// MemorySave implements [protocol.Handler].
func (h *host) MemorySave(_ context.Context, p protocol.MemorySaveParams) (protocol.NoResult, error) {
	st, err := h.store()
	if err != nil {
		return protocol.NoResult{}, err
	}
	if p.IfRev != nil {
		return protocol.NoResult{}, st.SaveIf(p.Key, p.Value, p.Metadata, *p.IfRev)
	}
	return protocol.NoResult{}, st.Save(p.Key, p.Value, p.Metadata)
}

// MemoryLoad implements [protocol.Handler].
func (h *host) MemoryLoad(_ context.Context, p protocol.KeyParams) (protocol.MemoryLoadResult, error) {
	st, err := h.store()
	if err != nil {
		return protocol.MemoryLoadResult{}, err
	}
	m, ok, err := st.Load(p.Key)
	if !ok || err != nil {
		return protocol.MemoryLoadResult{}, err
	}
	return protocol.MemoryLoadResult{Found: true, MemoryInfo: memoryInfo(m), Value: m.Value, Rev: m.Rev}, nil
}

// MemoryDelete implements [protocol.Handler].
func (h *host) MemoryDelete(_ context.Context, p protocol.KeyParams) (protocol.Found, error) {
	return h.found(func(st *memory.Store) (bool, error) { return st.Delete(p.Key) })
}

// MemoryExists implements [protocol.Handler].
func (h *host) MemoryExists(_ context.Context, p protocol.KeyParams) (protocol.Found, error) {
	return h.found(func(st *memory.Store) (bool, error) { return st.Exists(p.Key) })
}

// MemoryList implements [protocol.Handler].
func (h *host) MemoryList(context.Context, protocol.NoParams) (protocol.MemoryList, error) {
	return listed(h, (*memory.Store).List, memoryInfo)
}

// ToolSave implements [protocol.Handler].
func (h *host) ToolSave(_ context.Context, p protocol.ToolSaveParams) (protocol.NoResult, error) {
	st, err := h.store()
	if err != nil {
		return protocol.NoResult{}, err
	}
	return protocol.NoResult{}, st.SaveTool(memory.Tool{Name: p.Name, Source: p.Source, Description: p.Description, Signature: p.Signature})
}

// ToolList implements [protocol.Handler].
func (h *host) ToolList(context.Context, protocol.NoParams) (protocol.SavedTools, error) {
	return listed(h, (*memory.Store).Tools, func(t memory.Tool) protocol.SavedToolInfo {
		return protocol.SavedToolInfo{Name: t.Name, Description: t.Description, Signature: t.Signature, UpdatedAt: epoch(t.Updated)}
	})
}

// ToolDelete implements [protocol.Handler].
func (h *host) ToolDelete(_ context.Context, p protocol.NameParams) (protocol.Found, error) {
	return h.found(func(st *memory.Store) (bool, error) { return st.DeleteTool(p.Name) })
}

// found asks the store whether something is there (or was, before a delete).
func (h *host) found(ask func(*memory.Store) (bool, error)) (protocol.Found, error) {
	st, err := h.store()
	if err != nil {
		return false, err
	}
	ok, err := ask(st)
	return protocol.Found(ok), err
}

// listed is what the store lists, each converted for the sandbox; with what
// it could read when it also returns an error.
func listed[T, R any](h *host, list func(*memory.Store) ([]T, error), conv func(T) R) ([]R, error) {
	st, err := h.store()
	if err != nil {
		return nil, err
	}
	items, err := list(st)
	out := make([]R, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	return out, err
}
