package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The target server's tools and prompt of 2026-07-28's input_required
// results (SEP-2322): each asks its client through its result, and answers
// when called again with the client's answers (and its requestState).

// roundKey signs the target's requestStates, so a changed one is refused.
var roundKey = func() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}()

// signState is state with its signature.
func signState(state string) string {
	m := hmac.New(sha256.New, roundKey)
	m.Write([]byte(state))
	return state + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openState returns the state signed in s, or an invalid-params error if
// s is not one the target signed.
func openState(s string) (string, error) {
	state, _, ok := strings.Cut(s, ".")
	if !ok || !hmac.Equal([]byte(signState(state)), []byte(s)) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState failed its integrity check: call again without it"}
	}
	return state, nil
}

// askFor is a question for one field of kind.
func askFor(message, field, kind string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: message, RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{field: map[string]any{"type": kind}}, "required": []string{field},
	}}
}

// sampleText asks the client's model text.
func sampleText(text string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{MaxTokens: maxTokens, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}
}

// answered reports whether responses has every key of asks.
func answered(responses mcp.InputResponseMap, asks mcp.InputRequestMap) bool {
	for k := range asks {
		if responses[k] == nil {
			return false
		}
	}
	return true
}

// field is a string field of an elicitation's answer.
func field(r mcp.InputResponse, name string) string {
	if e, ok := r.(*mcp.ElicitResult); ok {
		s, _ := e.Content[name].(string)
		return s
	}
	return ""
}

// addRoundTools adds the input_required tools and prompt to s.
func addRoundTools(s *mcp.Server) {
	tool := func(name, description string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: map[string]any{"type": "object"}}, h)
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	// once asks asks until they are all answered, then answers with done.
	once := func(asks mcp.InputRequestMap, done func(mcp.InputResponseMap) string) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !answered(req.Params.InputResponses, asks) {
				return &mcp.CallToolResult{InputRequests: asks}, nil
			}
			return text(done(req.Params.InputResponses)), nil
		}
	}
	tool("test_input_required_result_elicitation", "Asks the user's name through its result, then greets.",
		once(mcp.InputRequestMap{"user_name": askFor("What is your name?", "name", "string")},
			func(r mcp.InputResponseMap) string { return fmt.Sprintf("Hello, %s!", field(r["user_name"], "name")) }))
	tool("test_input_required_result_sampling", "Asks the client's model a question through its result.",
		once(mcp.InputRequestMap{"capital_question": sampleText("What is the capital of France?", 100)},
			func(r mcp.InputResponseMap) string {
				answer := ""
				if m, ok := r["capital_question"].(*mcp.CreateMessageResult); ok {
					if t, ok := m.Content.(*mcp.TextContent); ok {
						answer = t.Text
					}
				}
				return "The model said: " + answer
			}))
	tool("test_input_required_result_list_roots", "Asks the client's roots through its result.",
		once(mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}},
			func(r mcp.InputResponseMap) string {
				var uris []string
				if l, ok := r["client_roots"].(*mcp.ListRootsResult); ok {
					for _, root := range l.Roots {
						uris = append(uris, root.URI)
					}
				}
				return fmt.Sprintf("The client's roots: %s", strings.Join(uris, ", "))
			}))
	// signed asks asks with a signed requestState, and answers once its
	// answers come back with that state; a changed state is refused.
	signed := func(asks mcp.InputRequestMap, done string) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState == "" || !answered(req.Params.InputResponses, asks) {
				if req.Params.RequestState != "" {
					if _, err := openState(req.Params.RequestState); err != nil {
						return nil, err
					}
				}
				return &mcp.CallToolResult{InputRequests: asks, RequestState: signState("asked")}, nil
			}
			if _, err := openState(req.Params.RequestState); err != nil {
				return nil, err
			}
			return text(done), nil
		}
	}
	confirm := mcp.InputRequestMap{"confirm": askFor("Please confirm", "ok", "boolean")}
	tool("test_input_required_result_request_state", "Asks for a confirmation with a requestState, and checks it comes back.",
		signed(confirm, "Confirmed: state-ok"))
	tool("test_input_required_result_tampered_state", "Asks for a confirmation with a signed requestState, and refuses a changed one.",
		signed(confirm, "Confirmed: state-ok"))
	tool("test_input_required_result_multiple_inputs", "Asks three questions at once through its result.",
		signed(mcp.InputRequestMap{
			"user_name":    askFor("What is your name?", "name", "string"),
			"greeting":     sampleText("Generate a greeting", 50),
			"client_roots": &mcp.ListRootsParams{},
		}, "All three answered."))
	tool("test_input_required_result_multi_round", "Asks two questions, one round each.",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			round := ""
			if req.Params.RequestState != "" {
				var err error
				if round, err = openState(req.Params.RequestState); err != nil {
					return nil, err
				}
			}
			r := req.Params.InputResponses
			switch {
			case round == "round-1" && r["step1"] != nil:
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step2": askFor("Step 2: What is your favorite color?", "color", "string")},
					RequestState: signState("round-2")}, nil
			case round == "round-2" && r["step2"] != nil:
				return text("Done: both steps answered."), nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step1": askFor("Step 1: What is your name?", "name", "string")},
				RequestState: signState("round-1")}, nil
		})
	tool("test_input_required_result_capabilities", "Asks only what the client said it can answer (elicitation, sampling).",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			caps, _ := req.Params.Meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
			asks := mcp.InputRequestMap{}
			if caps["elicitation"] != nil {
				asks["user_name"] = askFor("What is your name?", "name", "string")
			}
			if caps["sampling"] != nil {
				asks["greeting"] = sampleText("Generate a greeting", 50)
			}
			if len(asks) == 0 || answered(req.Params.InputResponses, asks) {
				return text("Nothing more to ask."), nil
			}
			return &mcp.CallToolResult{InputRequests: asks}, nil
		})
	promptAsks := mcp.InputRequestMap{"user_context": askFor("What context should the prompt use?", "context", "string")}
	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that asks for its context first."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if !answered(req.Params.InputResponses, promptAsks) {
				return &mcp.GetPromptResult{InputRequests: promptAsks}, nil
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Use this context: " + field(req.Params.InputResponses["user_context"], "context")}}}}, nil
		})
}
