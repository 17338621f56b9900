package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Handler answers the sandbox's requests: one method per protocol method,
// with its parameter and result types. Its methods are called concurrently,
// once per request, and ctx ends when the run ends. An error is sent as an
// [Error] (see [ErrorOf]).
type Handler interface {
	DescribeServer(context.Context, ServerParams) (ServerDescription, error)
	ListTools(context.Context, ServerParams) (ToolDocs, error)
	QueryToolDocs(context.Context, QueryToolDocsParams) (ToolDocs, error)
	SearchToolDocs(context.Context, SearchToolDocsParams) (SearchResult, error)
	CallTool(context.Context, CallToolParams) (CallToolResult, error)
	CheckTools(context.Context, CheckToolsParams) (ToolChecks, error)
	ListResources(context.Context, ServerParams) (ResourceList, error)
	ListResourceTemplates(context.Context, ServerParams) (ResourceTemplateList, error)
	ReadResource(context.Context, ReadResourceParams) (ReadResourceResult, error)
	ListPrompts(context.Context, ServerParams) (PromptList, error)
	GetPrompt(context.Context, GetPromptParams) (GetPromptResult, error)
	Attach(context.Context, AttachParams) (NoResult, error)
	MemorySave(context.Context, MemorySaveParams) (NoResult, error)
	MemoryLoad(context.Context, KeyParams) (MemoryLoadResult, error)
	MemoryDelete(context.Context, KeyParams) (Found, error)
	MemoryExists(context.Context, KeyParams) (Found, error)
	MemoryList(context.Context, NoParams) (MemoryList, error)
	ToolSave(context.Context, ToolSaveParams) (NoResult, error)
	ToolList(context.Context, NoParams) (SavedTools, error)
	ToolDelete(context.Context, NameParams) (Found, error)
}

// methodInfo serves one method: it decodes the parameters into the method's
// type and calls the Handler's method.
type methodInfo struct {
	serve func(ctx context.Context, h Handler, method string, params json.RawMessage) (any, error)
}

// methods is the dispatch table: every method the sandbox sends, and the
// [Handler] method that answers it.
var methods = map[string]methodInfo{
	MethodDescribeServer:        method(Handler.DescribeServer),
	MethodListTools:             method(Handler.ListTools),
	MethodQueryToolDocs:         method(Handler.QueryToolDocs),
	MethodSearchToolDocs:        method(Handler.SearchToolDocs),
	MethodCallTool:              method(Handler.CallTool),
	MethodCheckTools:            method(Handler.CheckTools),
	MethodListResources:         method(Handler.ListResources),
	MethodListResourceTemplates: method(Handler.ListResourceTemplates),
	MethodReadResource:          method(Handler.ReadResource),
	MethodListPrompts:           method(Handler.ListPrompts),
	MethodGetPrompt:             method(Handler.GetPrompt),
	MethodAttach:                method(Handler.Attach),
	MethodMemorySave:            method(Handler.MemorySave),
	MethodMemoryLoad:            method(Handler.MemoryLoad),
	MethodMemoryDelete:          method(Handler.MemoryDelete),
	MethodMemoryExists:          method(Handler.MemoryExists),
	MethodMemoryList:            method(Handler.MemoryList),
	MethodToolSave:              method(Handler.ToolSave),
	MethodToolList:              method(Handler.ToolList),
	MethodToolDelete:            method(Handler.ToolDelete),
}

// method makes the methodInfo of a Handler method with parameters P and
// result R. Absent or null parameters are P's zero value.
func method[P, R any](f func(Handler, context.Context, P) (R, error)) methodInfo {
	return methodInfo{serve: func(ctx context.Context, h Handler, name string, raw json.RawMessage) (any, error) {
		var p P
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, &Error{Code: CodeBadArguments, Message: fmt.Sprintf("%s: malformed parameters: %v", name, err)}
			}
		}
		r, err := f(h, ctx, p)
		if err != nil {
			return nil, err
		}
		return r, nil
	}}
}

// Dispatch answers one request with h: it decodes params into the method's
// parameter type and returns the method's result, for the reply.
func Dispatch(ctx context.Context, h Handler, method string, params json.RawMessage) (any, error) {
	m, ok := methods[method]
	if !ok {
		return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("unknown request %q (the sandbox helper and codebridge disagree; update both)", method)}
	}
	return m.serve(ctx, h, method, params)
}

// Methods lists the methods of the table, sorted.
func Methods() []string { return slices.Sorted(maps.Keys(methods)) }

// Server answers requests by method name with its Handler, through the
// dispatch table; it is the host a run of package python calls.
type Server struct {
	Handler
}

// Call implements python.Host: see [Dispatch].
func (s Server) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return Dispatch(ctx, s.Handler, method, params)
}
