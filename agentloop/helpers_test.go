package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/tool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	qwenOnce sync.Once
	qwenTok  *tokenizer.Tokenizer
	qwenErr  error
)

// qwen3 loads the real Qwen3 tokenizer once per test binary.
func qwen3(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := sharedQwen3()
	if err != nil {
		t.Fatalf("loading the Qwen3 tokenizer: %v", err)
	}
	if tok == nil {
		t.Skip("Qwen3 tokenizer not found")
	}
	return tok
}

// sharedQwen3 loads the copy committed (gzipped) with the tokenizer
// package, once per test binary.
func sharedQwen3() (*tokenizer.Tokenizer, error) {
	qwenOnce.Do(func() { qwenTok, qwenErr = tokenizertest.Qwen3("") })
	return qwenTok, qwenErr
}

func tokenID(t testing.TB, tok *tokenizer.Tokenizer, s string) int32 {
	t.Helper()
	id, ok := tok.TokenID(s)
	require.True(t, ok, "token %q", s)
	return id
}

// turn encodes a model turn as the model would sample it: its text then
// <|im_end|>.
func turn(t testing.TB, tok *tokenizer.Tokenizer, text string) []int32 {
	return append(tok.Encode(text), tokenID(t, tok, "<|im_end|>"))
}

// recorder wraps a server and records every call in order.
type recorder struct {
	server.LLMServer
	mu   sync.Mutex
	reqs []server.GenerateRequest
	outs []server.TokenOutput
}

func (r *recorder) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	out, err := r.LLMServer.Generate(ctx, req)
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.outs = append(r.outs, out)
	r.mu.Unlock()
	return out, err
}

// byID returns the calls of one request id.
func (r *recorder) byID(id string) (reqs []server.GenerateRequest, outs []server.TokenOutput) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, q := range r.reqs {
		if q.RequestID == id {
			reqs = append(reqs, q)
			outs = append(outs, r.outs[i])
		}
	}
	return reqs, outs
}

// countingTool is a stateful tool that counts instances and can fail,
// panic or block, by argument.
type countingTool struct {
	name     string
	created  atomic.Int64
	released atomic.Int64
	live     sync.Map // instance id → kwargs
	next     atomic.Int64
}

type countingArgs struct {
	Mode string `json:"mode"` // "ok", "fail", "panic", "block"
	Text string `json:"text"`
}

func (c *countingTool) Schema() chat.ToolSchema {
	return chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
		Name:        c.name,
		Description: "Echoes text; mode selects a failure.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string"},"text":{"type":"string"}},"required":["mode"]}`),
	}}
}

func (c *countingTool) Create(ctx context.Context, kwargs map[string]any) (string, error) {
	id := fmt.Sprintf("%s-%d", c.name, c.next.Add(1))
	c.created.Add(1)
	c.live.Store(id, kwargs)
	return id, nil
}

func (c *countingTool) Execute(ctx context.Context, id string, args json.RawMessage) (tool.Result, error) {
	if _, ok := c.live.Load(id); !ok {
		return tool.Result{}, fmt.Errorf("instance %q is not live", id)
	}
	var a countingArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return tool.Result{}, err
	}
	switch a.Mode {
	case "fail":
		return tool.Result{}, errors.New("the tool failed on purpose")
	case "panic":
		panic("tool panic on purpose")
	case "block":
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}
	return tool.Result{Text: "echo: " + a.Text, Reward: 0.5}, nil
}

func (c *countingTool) Release(ctx context.Context, id string) error {
	if _, ok := c.live.LoadAndDelete(id); !ok {
		return fmt.Errorf("release of unknown instance %q", id)
	}
	c.released.Add(1)
	return nil
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func tokenizerContext(s Sample) tokenizer.ChatContext {
	return tokenizer.ChatContext{Messages: s.Messages, AddGenerationPrompt: true}
}

func tokenizerContextTools(s Sample, tools []chat.ToolSchema) tokenizer.ChatContext {
	return tokenizer.ChatContext{Messages: s.Messages, Tools: tools, AddGenerationPrompt: true}
}
