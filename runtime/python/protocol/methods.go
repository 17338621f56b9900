package protocol

import "encoding/json"

// The methods a sandbox's requests name, each with one parameter type and one
// result type. [Dispatch] decodes the parameters into the method's type and
// calls the [Handler] method of the same name; the table in handler.go lists
// them all.
const (
	MethodDescribeServer = "describe_server"  // [ServerParams] → [ServerDescription]
	MethodListTools      = "list_tools"       // [ServerParams] → [ToolDocs] (full)
	MethodQueryToolDocs  = "query_tool_docs"  // [QueryToolDocsParams] → [ToolDocs]
	MethodSearchToolDocs = "search_tool_docs" // [SearchToolDocsParams] → [SearchResult]
	MethodCallTool       = "call_tool"        // [CallToolParams] → [CallToolResult]
	MethodCheckTools     = "check_tools"      // [CheckToolsParams] → [ToolChecks]
	MethodAttach         = "attach"           // [AttachParams] → [NoResult]
)

// Resource and prompt methods: the rest of a server's offer besides tools.
// Each result is the downstream server's MCP JSON, encoded once by the host
// (which masks the server's secrets in it and audits its size) and sent on
// as it is.
const (
	MethodListResources         = "list_resources"          // [ServerParams] → [ResourceList]
	MethodListResourceTemplates = "list_resource_templates" // [ServerParams] → [ResourceTemplateList]
	MethodReadResource          = "read_resource"           // [ReadResourceParams] → [ReadResourceResult]
	MethodListPrompts           = "list_prompts"            // [ServerParams] → [PromptList]
	MethodGetPrompt             = "get_prompt"              // [GetPromptParams] → [GetPromptResult]
)

// ReadResourceParams reads the resource at URI (a listed one, a link from a
// tool's result, or one made from a template).
type ReadResourceParams struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

// GetPromptParams gets a prompt filled in with Arguments (MCP's prompt
// arguments are strings).
type GetPromptParams struct {
	Server    string            `json:"server"`
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
}

// ResourceList answers list_resources: MCP Resources, [{uri, name, title?,
// description?, mimeType?, size?}].
type ResourceList struct{ json.RawMessage }

// ResourceTemplateList answers list_resource_templates: MCP
// ResourceTemplates, [{uriTemplate, name, title?, description?, mimeType?}].
type ResourceTemplateList struct{ json.RawMessage }

// ReadResourceResult answers read_resource: MCP's ReadResourceResult,
// {contents: [{uri, mimeType?, text | blob (base64)}]}.
type ReadResourceResult struct{ json.RawMessage }

// PromptList answers list_prompts: MCP Prompts, [{name, title?,
// description?, arguments?: [{name, description?, required?}]}].
type PromptList struct{ json.RawMessage }

// GetPromptResult answers get_prompt: MCP's GetPromptResult,
// {description?, messages: [{role, content}]}.
type GetPromptResult struct{ json.RawMessage }

// NoParams is the parameters of a method that takes none.
type NoParams struct{}

// NoResult is the result of a method that returns nothing: JSON null.
type NoResult struct{}

// MarshalJSON encodes nothing as null, which the sandbox ignores.
func (NoResult) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// ServerParams names a server, by name or alias.
type ServerParams struct {
	Server string `json:"server"`
}

// QueryToolDocsParams asks for one tool's docs, or all of a server's when
// Tool is nil. Detail is "summary" or "full".
type QueryToolDocsParams struct {
	Server string  `json:"server"`
	Tool   *string `json:"tool"`
	Detail string  `json:"detail"`
}

// SearchToolDocsParams searches every server's tools.
type SearchToolDocsParams struct {
	Query  string `json:"query"`
	Limit  int    `json:"limit"`
	Detail string `json:"detail"`
}

// CallToolParams calls a tool; Arguments is a JSON object or absent.
type CallToolParams struct {
	Server    string          `json:"server"`
	Tool      *string         `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// StartFailed: the sandbox's request for this tool's docs, made for the
	// argument check just before, failed to start the server, so the host
	// does not start it again for the call if it is still not running.
	StartFailed bool `json:"start_failed,omitempty"`
}

// CheckToolsParams asks whether each tool could be called now, without
// calling it. A Tool of "" asks about the server alone.
type CheckToolsParams struct {
	Tools []ToolRef `json:"tools"`
}

// ToolRef names one tool of one server, as code wrote them (names or
// aliases).
type ToolRef struct {
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"`
}

// Readiness is the answer about one tool: ready, or why a call would fail.
type Readiness string

const (
	Ready          Readiness = "ready"            // a call would be sent (it may still ask the person first: Message says)
	NotConfigured  Readiness = "not_configured"   // no such server, or it is disabled or its entry is invalid
	NotFound       Readiness = "not_found"        // the server has no such tool
	Quarantined    Readiness = "quarantined"      // its definition changed since it was pinned, is new under quarantine_new, or the scanner holds it
	Denied         Readiness = "denied"           // the policy blocks it
	SignInRequired Readiness = "sign_in_required" // the server needs a person to sign in first
	Starting       Readiness = "starting"         // the server is still starting
	Failed         Readiness = "failed"           // the server did not start, or failed to list its tools
)

// ToolCheck is the readiness of one tool (or server), in the order asked,
// with the names they resolved to and a message that says what to do.
type ToolCheck struct {
	Server  string    `json:"server"`
	Tool    string    `json:"tool,omitempty"`
	Status  Readiness `json:"status"`
	Message string    `json:"message,omitempty"`
}

// ToolChecks answers check_tools.
type ToolChecks []ToolCheck

// CallToolResult answers call_tool: the downstream tool's MCP
// CallToolResult (content, structuredContent?, isError?) as JSON, encoded
// once by the host, which audits its size, and sent on as it is.
type CallToolResult struct {
	json.RawMessage
}

// AttachParams returns an image or a file with the run's result. Data is
// absent when it is over [Init.MaxAttachment]: the sandbox does not send it,
// and the host records the attachment as dropped. Bytes is the size of the
// data either way.
type AttachParams struct {
	Kind     string `json:"kind"` // "image" or "file"
	Name     string `json:"name"`
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"` // base64 in JSON
	Bytes    int    `json:"bytes"`
}

// ToolDocs answers list_tools and query_tool_docs.
type ToolDocs []ToolDoc

// ToolDoc documents one tool. Summary docs carry the first line of the
// description; full docs the whole description, the schemas and a Python
// signature. Name and Alias repeat Tool and ToolAlias for code written
// against list_tools.
type ToolDoc struct {
	Server       string `json:"server"`
	ServerAlias  string `json:"serverAlias"`
	Tool         string `json:"tool"`
	ToolAlias    string `json:"toolAlias"`
	Name         string `json:"name"`
	Alias        string `json:"alias"`
	Description  string `json:"description"`
	InputSchema  any    `json:"inputSchema,omitempty"`
	OutputSchema any    `json:"outputSchema,omitempty"`
	Signature    string `json:"signature,omitempty"`
	// Stub is the tool as Python: the TypedDicts its signature names, then
	// the function with its description as the docstring (detail="full").
	Stub string `json:"stub,omitempty"`
	// Params are the tool's parameters, which the sandbox checks calls
	// against and builds help() from (detail="full").
	Params []Param  `json:"params,omitempty"`
	Score  *float64 `json:"score,omitempty"` // search hits only
	// Listed says, for a doc from a server that was not running, that it
	// comes from the tool list saved when the server last listed its tools,
	// and how long ago that was. Empty when the running server listed it.
	Listed string `json:"listed,omitempty"`
}

// Param is one parameter of a tool, as its Python signature shows it.
type Param struct {
	Name     string          `json:"name"`  // as the server names it
	Alias    string          `json:"alias"` // as a Python keyword argument
	Type     string          `json:"type"`  // Python type, e.g. list[str] | None
	Required bool            `json:"required"`
	Default  json.RawMessage `json:"default,omitempty"` // the schema's default, if any
}

// ToolSummary is a tool in a [ServerDescription] or a loaded [ServerInfo].
type ToolSummary struct {
	Name        string `json:"name"`
	Alias       string `json:"alias"`
	Description string `json:"description"`
}

// ServerDescription answers describe_server. The counts of resources,
// resource templates and prompts are given when the server is running (so
// counting them starts nothing); 0 when it offers none.
type ServerDescription struct {
	Name              string    `json:"name"`
	Alias             string    `json:"alias"`
	Description       string    `json:"description"`
	Tools             []ToolDoc `json:"tools"`
	Resources         *int      `json:"resources,omitempty"`
	ResourceTemplates *int      `json:"resourceTemplates,omitempty"`
	Prompts           *int      `json:"prompts,omitempty"`
}

// SearchResult answers search_tool_docs: the hits, best first, and the
// servers that could not be searched.
type SearchResult struct {
	Results     []ToolDoc     `json:"results"`
	Unavailable []Unavailable `json:"unavailable"`
}

// Unavailable names a server that could not be reached, and why.
type Unavailable struct {
	Server string `json:"server"`
	Error  string `json:"error"`
}

// Memory and saved-helper methods (persisted by the host; see bridge/memory).
const (
	MethodMemorySave   = "memory_save"   // [MemorySaveParams] → [NoResult]
	MethodMemoryLoad   = "memory_load"   // [KeyParams] → [MemoryLoadResult]
	MethodMemoryDelete = "memory_delete" // [KeyParams] → [Found] (it existed)
	MethodMemoryExists = "memory_exists" // [KeyParams] → [Found]
	MethodMemoryList   = "memory_list"   // [NoParams] → [MemoryList]
	MethodToolSave     = "tool_save"     // [ToolSaveParams] → [NoResult]
	MethodToolList     = "tool_list"     // [NoParams] → [SavedTools]
	MethodToolDelete   = "tool_delete"   // [NameParams] → [Found] (it existed)
)

// Found answers memory_exists, memory_delete and tool_delete: whether the
// memory or helper was there (before the delete).
type Found bool

// KeyParams names a memory.
type KeyParams struct {
	Key string `json:"key"`
}

// NameParams names a saved helper.
type NameParams struct {
	Name string `json:"name"`
}

// MemorySaveParams stores Value (any JSON) under Key. With IfRev the save
// happens only if the memory's revision is still *IfRev (0: none stored),
// else it fails with code "conflict": update_memory's read-modify-write.
type MemorySaveParams struct {
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	IfRev    *int64          `json:"if_rev,omitempty"`
}

// MemoryList answers memory_list.
type MemoryList []*MemoryInfo

// MemoryInfo describes a stored memory, in the reference bridge's shape
// (times are seconds since the epoch) plus its size.
type MemoryInfo struct {
	Key       string          `json:"key"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Bytes     int             `json:"bytes"` // of its JSON value
	CreatedAt float64         `json:"created_at"`
	UpdatedAt float64         `json:"updated_at"`
}

// MemoryLoadResult answers memory_load: when Found, the value, its
// description and its revision (for MemorySaveParams.IfRev); else Rev 0.
type MemoryLoadResult struct {
	Found bool `json:"found"`
	*MemoryInfo
	Value json.RawMessage `json:"value,omitempty"`
	Rev   int64           `json:"rev"`
}

// ToolSaveParams saves a helper's source.
type ToolSaveParams struct {
	Name        string `json:"name"`
	Source      string `json:"source"`
	Description string `json:"description"`
	Signature   string `json:"signature,omitempty"` // e.g. "clean(rows, drop_empty=True)"
}

// SavedTools answers tool_list.
type SavedTools []SavedToolInfo

// SavedToolInfo describes a saved helper in tool_list.
type SavedToolInfo struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Signature   string  `json:"signature,omitempty"`
	UpdatedAt   float64 `json:"updated_at"`
}
