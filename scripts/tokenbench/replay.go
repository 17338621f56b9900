package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The replay mode gives each task to a real model, both ways, through the
// Anthropic Messages API with the user's key, and records the usage the API
// reports. It runs only when ANTHROPIC_API_KEY is set.

const (
	anthropicURL  = "https://api.anthropic.com/v1/messages"
	maxReplayTurn = 12 // a conversation without a final answer by then is an error
)

// replayer talks to the Messages API.
type replayer struct {
	url, key, model string
	client          *http.Client
}

// apiTool is a tool as the Messages API takes it.
type apiTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// block is a content block of a message: text, tool_use or tool_result.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type apiMessage struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// apiUsage is the usage the API reports for a response, summed over a
// conversation.
type apiUsage struct {
	InputTokens   int `json:"input_tokens"`
	OutputTokens  int `json:"output_tokens"`
	CacheRead     int `json:"cache_read_input_tokens"`
	CacheCreation int `json:"cache_creation_input_tokens"`
}

type apiResponse struct {
	Content    []block  `json:"content"`
	StopReason string   `json:"stop_reason"`
	Usage      apiUsage `json:"usage"`
}

// replayed is one task replayed one way.
type replayed struct {
	Turns  int      `json:"turns"`
	Usage  apiUsage `json:"usage"`
	Answer string   `json:"answer"`
}

// toolRunner runs a call the model asked for and returns the result's text
// and whether it is an error.
type toolRunner func(ctx context.Context, name string, input map[string]any) (string, bool, error)

// converse gives the model prompt and tools, runs the calls it asks for
// until it answers without one, and sums the usage.
func (rp replayer) converse(ctx context.Context, tools []apiTool, prompt string, run toolRunner) (replayed, error) {
	var res replayed
	msgs := []apiMessage{{Role: "user", Content: []block{{Type: "text", Text: prompt}}}}
	for res.Turns < maxReplayTurn {
		resp, err := rp.send(ctx, tools, msgs)
		if err != nil {
			return res, err
		}
		res.Turns++
		res.Usage.InputTokens += resp.Usage.InputTokens
		res.Usage.OutputTokens += resp.Usage.OutputTokens
		res.Usage.CacheRead += resp.Usage.CacheRead
		res.Usage.CacheCreation += resp.Usage.CacheCreation
		msgs = append(msgs, apiMessage{Role: "assistant", Content: resp.Content})
		var results []block
		for _, b := range resp.Content {
			switch b.Type {
			case "text":
				res.Answer += b.Text
			case "tool_use":
				var input map[string]any
				if err := json.Unmarshal(b.Input, &input); err != nil {
					return res, fmt.Errorf("the model's input to %s: %w", b.Name, err)
				}
				text, isErr, err := run(ctx, b.Name, input)
				if err != nil {
					text, isErr = err.Error(), true
				}
				results = append(results, block{Type: "tool_result", ToolUseID: b.ID, Content: text, IsError: isErr})
			}
		}
		if len(results) == 0 {
			return res, nil
		}
		msgs = append(msgs, apiMessage{Role: "user", Content: results})
	}
	return res, fmt.Errorf("no final answer after %d turns", maxReplayTurn)
}

func (rp replayer) send(ctx context.Context, tools []apiTool, msgs []apiMessage) (*apiResponse, error) {
	body, err := json.Marshal(map[string]any{"model": rp.model, "max_tokens": 4096, "tools": tools, "messages": msgs})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rp.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-api-key", rp.key)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := rp.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the Messages API: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the Messages API's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the Messages API answered %s: %s", resp.Status, raw)
	}
	var r apiResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("the Messages API's answer: %w", err)
	}
	return &r, nil
}

// directTools are every server's tools as the API takes them, named
// SERVER__TOOL.
func directTools(n *native) ([]apiTool, error) {
	var all []apiTool
	for _, s := range servers {
		var listed []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(n.tools[s.name], &listed); err != nil {
			return nil, fmt.Errorf("the tools of %s: %w", s.name, err)
		}
		for _, t := range listed {
			all = append(all, apiTool{Name: s.name + "__" + t.Name, Description: t.Description, InputSchema: t.InputSchema})
		}
	}
	return all, nil
}

// directRunner calls SERVER__TOOL on the server directly.
func directRunner(n *native) toolRunner {
	return func(ctx context.Context, name string, input map[string]any) (string, bool, error) {
		server, tool, ok := strings.Cut(name, "__")
		if !ok {
			return "", false, fmt.Errorf("no tool %q", name)
		}
		return n.call(ctx, server, tool, input)
	}
}
