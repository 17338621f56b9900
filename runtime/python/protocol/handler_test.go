package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// keyHost answers memory_exists with whether the key is "there", and
// refuses the rest.
type keyHost struct {
	Refuse
}

func (keyHost) MemoryExists(_ context.Context, p KeyParams) (Found, error) {
	return p.Key == "there", nil
}

func (keyHost) MemorySave(context.Context, MemorySaveParams) (NoResult, error) {
	return NoResult{}, nil
}

func TestDispatch(t *testing.T) {
	h := keyHost{Refuse: func(method string) error { return errors.New("refused " + method) }}
	tests := []struct {
		name, method, params string
		want                 string // the result as JSON
		wantCode             Code   // when it fails
		wantMsg              string
	}{
		{name: "typed params and result", method: MethodMemoryExists, params: `{"key":"there"}`, want: `true`},
		{name: "null params are the zero value", method: MethodMemoryExists, params: `null`, want: `false`},
		{name: "absent params", method: MethodMemoryExists, want: `false`},
		{name: "no result is null", method: MethodMemorySave, params: `{"key":"k","value":1}`, want: `null`},
		{name: "malformed params", method: MethodMemoryExists, params: `{"key":1}`, wantCode: CodeBadArguments, wantMsg: "memory_exists: malformed parameters"},
		{name: "unknown method", method: "list_servers", wantCode: CodeInternal, wantMsg: `unknown request "list_servers"`},
		{name: "handler error", method: MethodToolList, wantCode: CodeInternal, wantMsg: "refused tool_list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Server{h}.Call(t.Context(), tt.method, json.RawMessage(tt.params))
			if tt.wantMsg != "" {
				e := ErrorOf(err)
				if err == nil || e.Code != tt.wantCode || !strings.Contains(e.Message, tt.wantMsg) {
					t.Fatalf("error %v (code %q), want %s containing %q", err, e.Code, tt.wantCode, tt.wantMsg)
				}
				return
			}
			got, merr := json.Marshal(res)
			if err != nil || merr != nil || string(got) != tt.want {
				t.Fatalf("result %s, %v, %v; want %s", got, err, merr, tt.want)
			}
		})
	}
}

// TestErrorOf: a wrapped Error keeps its code and data, any other error is
// internal, and the message is the whole error's.
func TestErrorOf(t *testing.T) {
	wrapped := ErrorOf(errors.Join(errors.New("calling"), &Error{Code: CodeTimeout, Message: "slow", Data: []string{"a"}}))
	if wrapped.Code != CodeTimeout || wrapped.Message != "calling\nslow" || wrapped.Data == nil {
		t.Errorf("wrapped: %+v", wrapped)
	}
	if plain := ErrorOf(errors.New("boom")); plain.Code != CodeInternal || plain.Message != "boom" || plain.Data != nil {
		t.Errorf("plain: %+v", plain)
	}
}

// TestCallToolResultIsRaw: a call's result is sent as the tool's JSON, not
// as a JSON string of it.
func TestCallToolResultIsRaw(t *testing.T) {
	got, err := json.Marshal(CallToolResult{RawMessage: json.RawMessage(`{"content":[]}`)})
	if err != nil || string(got) != `{"content":[]}` {
		t.Errorf("got %s, %v", got, err)
	}
}
