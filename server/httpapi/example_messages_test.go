package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// Serving the Anthropic Messages API: the scripted engine "writes" a
// hermes tool call, which comes back as a tool_use block.
func Example_messages() {
	// A small ChatML tokenizer with a Qwen-style template, kept in the
	// repository.
	tok, err := tokenizer.Load("../../internal/arith/checkpoint")
	if err != nil {
		panic(err)
	}
	reply := append(tok.Encode(`<tool_call>
{"name": "add", "arguments": {"a": 2, "b": 3}}
</tool_call>`), tok.EOSTokenIDs()...)
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(reply...)})
	srv, err := httpapi.Start(eng, httpapi.Config{Model: "arith", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader(`{
		"model": "arith", "max_tokens": 64,
		"tools": [{"name": "add", "description": "Adds two numbers",
			"input_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}],
		"messages": [{"role": "user", "content": "What is 2 + 3?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "unused") // checked when Config.AuthToken is set
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string          `json:"type"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, msg.StopReason)
	for _, b := range msg.Content {
		fmt.Println(b.Type, b.Name, string(b.Input))
	}
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// 200 tool_use
	// tool_use add {"a":2,"b":3}
}
