package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// fuzzHandler is a fake Handler: the methods whose parameters hold pointers
// or raw JSON read them as the host does and answer with results that hold
// nil pointers; every other method refuses with CodeUnsupported.
type fuzzHandler struct {
	Refuse
	calls int
}

func (h *fuzzHandler) QueryToolDocs(_ context.Context, p QueryToolDocsParams) (ToolDocs, error) {
	h.calls++
	if p.Tool != nil && *p.Tool == "" {
		return nil, &Error{Code: CodeUnknownTool, Message: "empty tool name"}
	}
	return ToolDocs{}, nil
}

func (h *fuzzHandler) CallTool(_ context.Context, p CallToolParams) (CallToolResult, error) {
	h.calls++
	if p.Tool == nil {
		return CallToolResult{}, &Error{Code: CodeBadArguments, Message: "no tool"}
	}
	if len(p.Arguments) > 0 && !json.Valid(p.Arguments) {
		return CallToolResult{}, &Error{Code: CodeBadArguments, Message: "arguments not JSON"}
	}
	return CallToolResult{RawMessage: json.RawMessage(`{"content":[]}`)}, nil
}

func (h *fuzzHandler) CheckTools(_ context.Context, p CheckToolsParams) (ToolChecks, error) {
	h.calls++
	if len(p.Tools) == 0 {
		return nil, &Error{Code: CodeBadArguments, Message: "no tools"}
	}
	return ToolChecks{{Server: p.Tools[0].Server, Status: Ready}}, nil
}

func (h *fuzzHandler) MemorySave(_ context.Context, p MemorySaveParams) (NoResult, error) {
	h.calls++
	if p.IfRev != nil && *p.IfRev < 0 {
		return NoResult{}, &Error{Code: CodeConflict, Message: "revision"}
	}
	return NoResult{}, nil
}

func (h *fuzzHandler) MemoryLoad(_ context.Context, p KeyParams) (MemoryLoadResult, error) {
	h.calls++
	return MemoryLoadResult{Found: p.Key != ""}, nil // MemoryInfo nil
}

func (h *fuzzHandler) MemoryList(context.Context, NoParams) (MemoryList, error) {
	h.calls++
	return MemoryList{nil, {Key: "k"}}, nil
}

func (h *fuzzHandler) Attach(_ context.Context, p AttachParams) (NoResult, error) {
	h.calls++
	if p.Bytes < 0 {
		return NoResult{}, &Error{Code: CodeBadArguments, Message: "negative size"}
	}
	return NoResult{}, nil
}

// resultTypes maps each method to the result type of its Handler method.
func resultTypes(t testing.TB) map[string]reflect.Type {
	t.Helper()
	hand := reflect.TypeFor[Handler]()
	names := map[string]string{
		MethodDescribeServer: "DescribeServer", MethodListTools: "ListTools", MethodQueryToolDocs: "QueryToolDocs",
		MethodSearchToolDocs: "SearchToolDocs", MethodCallTool: "CallTool", MethodListResources: "ListResources",
		MethodListResourceTemplates: "ListResourceTemplates", MethodReadResource: "ReadResource",
		MethodListPrompts: "ListPrompts", MethodGetPrompt: "GetPrompt", MethodAttach: "Attach",
		MethodMemorySave: "MemorySave", MethodMemoryLoad: "MemoryLoad", MethodMemoryDelete: "MemoryDelete",
		MethodMemoryExists: "MemoryExists", MethodMemoryList: "MemoryList", MethodToolSave: "ToolSave",
		MethodToolList: "ToolList", MethodToolDelete: "ToolDelete", MethodCheckTools: "CheckTools",
	}
	out := map[string]reflect.Type{}
	for _, m := range Methods() {
		hm, ok := hand.MethodByName(names[m])
		if !ok {
			t.Fatalf("method %q has no Handler method in this test's table: add it", m)
		}
		out[m] = hm.Type.Out(0)
	}
	return out
}

// FuzzDispatch sends any parameters to any method (a byte picks the method)
// through a fake Handler. Dispatch never panics; an answer is either the
// method's own result type, which encodes as JSON, or an *Error with a known
// code; parameters that are not JSON are refused with bad_arguments before
// the Handler is called; an unknown method is refused as internal.
func FuzzDispatch(f *testing.F) {
	methodNames := Methods()
	types := resultTypes(f)
	seeds := []string{
		``, `null`, `{}`, `[]`, `"x"`, `1e999`, `{"server":null,"tool":null}`, `{"tool":"t","arguments":null}`,
		`{"tool":"t","arguments":{"a":[1,2,{"b":null}]}}`, `{"server":"s","tool":""}`, `{"key":"k","if_rev":null}`,
		`{"key":"k","value":null,"metadata":null,"if_rev":-1}`, `{"if_rev":99999999999999999999}`,
		`{"limit":1e300}`, `{"limit":-1}`, `{"data":"!!notbase64"}`, `{"data":"aGk=","bytes":-5}`,
		`{"arguments":{"a":1}} trailing`, `{"name":"x","arguments":{"k":1}}`, `{"tool":{"nested":1}}`,
		`{"server":"\ud800"}`, "{\"server\":\"\xff\"}", `{"tools":[{"server":"s","tool":"t"}]}`, `{"tools":[null,{"server":1}]}`,
	}
	for i := range methodNames {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Add(uint8(255), []byte(`{}`))
	f.Fuzz(func(t *testing.T, which uint8, params []byte) {
		method := "no_such_method"
		if int(which) < len(methodNames) {
			method = methodNames[which]
		}
		h := &fuzzHandler{Refuse: func(string) error { return &Error{Code: CodeUnsupported, Message: "refused"} }}
		res, err := Dispatch(t.Context(), h, method, params)
		if err != nil {
			if res != nil {
				t.Fatalf("%s(%q): both a result %#v and an error %v", method, params, res, err)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("%s(%q): error %T %v is not a *protocol.Error", method, params, err, err)
			}
			if !slices.Contains(Codes, pe.Code) {
				t.Fatalf("%s(%q): unknown code %q", method, params, pe.Code)
			}
			if _, known := types[method]; !known && pe.Code != CodeInternal {
				t.Fatalf("unknown method answered with code %q, want %q", pe.Code, CodeInternal)
			}
			if len(params) > 0 && string(params) != "null" && !json.Valid(params) && (pe.Code != CodeBadArguments || h.calls != 0) && types[method] != nil {
				t.Fatalf("%s(%q): invalid JSON gave code %q after %d calls, want %q before the Handler", method, params, pe.Code, h.calls, CodeBadArguments)
			}
			if _, err := json.Marshal(ErrorOf(err)); err != nil {
				t.Fatalf("%s(%q): the error does not encode: %v", method, params, err)
			}
			return
		}
		if got, want := reflect.TypeOf(res), types[method]; got != want {
			t.Fatalf("%s(%q): result of type %v, want %v", method, params, got, want)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("%s(%q): the result %#v does not encode: %v", method, params, res, err)
		}
		if h.calls != 1 {
			t.Fatalf("%s(%q): the Handler was called %d times, want once", method, params, h.calls)
		}
	})
}
