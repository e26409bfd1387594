package llm_test

import (
	"context"
	"fmt"

	"github.com/agentos-run/agentos/driver/llm"
	"github.com/agentos-run/agentos/driver/llm/llmtest"
)

// A tool-calling round trip against the scripted model: the model asks for a
// tool, the caller runs it and sends the result back, the model answers.
func Example() {
	srv := llmtest.NewServer([]llmtest.Step{
		{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":2,"b":3}`}}},
		{Content: "2 + 3 = 5"},
	})
	defer srv.Close()

	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "scripted"})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "What is 2 + 3?"}},
		Tools:    []llm.ToolSpec{{Name: "add", Description: "Adds a and b.", Parameters: []byte(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`)}},
	}
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.Name, call.Arguments)

	req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: "5"})
	resp, err = c.Complete(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.FinishReason, resp.Message.Content)
	fmt.Println("requests:", srv.Requests(), "server error:", srv.Err())
	// Output:
	// tool_calls add {"a":2,"b":3}
	// stop 2 + 3 = 5
	// requests: 2 server error: <nil>
}
