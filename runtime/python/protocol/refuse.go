package protocol

import "context"

// Refuse is a [Handler] that answers every request with the error it returns
// for the method's name. Embedded in a struct, it serves the methods the
// struct does not define.
type Refuse func(method string) error

func (r Refuse) DescribeServer(context.Context, ServerParams) (ServerDescription, error) {
	return ServerDescription{}, r(MethodDescribeServer)
}

func (r Refuse) ListTools(context.Context, ServerParams) (ToolDocs, error) {
	return nil, r(MethodListTools)
}

func (r Refuse) QueryToolDocs(context.Context, QueryToolDocsParams) (ToolDocs, error) {
	return nil, r(MethodQueryToolDocs)
}

func (r Refuse) SearchToolDocs(context.Context, SearchToolDocsParams) (SearchResult, error) {
	return SearchResult{}, r(MethodSearchToolDocs)
}

func (r Refuse) CallTool(context.Context, CallToolParams) (CallToolResult, error) {
	return CallToolResult{}, r(MethodCallTool)
}

func (r Refuse) CheckTools(context.Context, CheckToolsParams) (ToolChecks, error) {
	return nil, r(MethodCheckTools)
}

func (r Refuse) ListResources(context.Context, ServerParams) (ResourceList, error) {
	return ResourceList{}, r(MethodListResources)
}

func (r Refuse) ListResourceTemplates(context.Context, ServerParams) (ResourceTemplateList, error) {
	return ResourceTemplateList{}, r(MethodListResourceTemplates)
}

func (r Refuse) ReadResource(context.Context, ReadResourceParams) (ReadResourceResult, error) {
	return ReadResourceResult{}, r(MethodReadResource)
}

func (r Refuse) ListPrompts(context.Context, ServerParams) (PromptList, error) {
	return PromptList{}, r(MethodListPrompts)
}

func (r Refuse) GetPrompt(context.Context, GetPromptParams) (GetPromptResult, error) {
	return GetPromptResult{}, r(MethodGetPrompt)
}

func (r Refuse) Attach(context.Context, AttachParams) (NoResult, error) {
	return NoResult{}, r(MethodAttach)
}

func (r Refuse) MemorySave(context.Context, MemorySaveParams) (NoResult, error) {
	return NoResult{}, r(MethodMemorySave)
}

func (r Refuse) MemoryLoad(context.Context, KeyParams) (MemoryLoadResult, error) {
	return MemoryLoadResult{}, r(MethodMemoryLoad)
}

func (r Refuse) MemoryDelete(context.Context, KeyParams) (Found, error) {
	return false, r(MethodMemoryDelete)
}

func (r Refuse) MemoryExists(context.Context, KeyParams) (Found, error) {
	return false, r(MethodMemoryExists)
}

func (r Refuse) MemoryList(context.Context, NoParams) (MemoryList, error) {
	return nil, r(MethodMemoryList)
}

func (r Refuse) ToolSave(context.Context, ToolSaveParams) (NoResult, error) {
	return NoResult{}, r(MethodToolSave)
}

func (r Refuse) ToolList(context.Context, NoParams) (SavedTools, error) {
	return nil, r(MethodToolList)
}

func (r Refuse) ToolDelete(context.Context, NameParams) (Found, error) {
	return false, r(MethodToolDelete)
}
