package servertest_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
)

// A scripted model written in text: the first turn calls a tool, the next
// answers. The replies are encoded with the tokenizer, markers included,
// so no id is written by hand.
func ExampleTextScripts() {
	tok, err := tokenizertest.Qwen()
	if err != nil {
		fmt.Println(err)
		return
	}
	rule, err := servertest.TextScripts(tok, map[string][]string{
		"traj-1": {
			"<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call><|im_end|>",
			"6*7 = 42.<|im_end|>",
		},
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	engine := servertest.New(servertest.Config{Rule: rule, Vocab: tok.VocabSize()})

	ctx := context.Background()
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "What is 6*7?"}}
	prompt, _ := tok.EncodeChat(tokenizer.ChatContext{Messages: msgs, AddGenerationPrompt: true})
	out, _ := engine.Generate(ctx, server.GenerateRequest{RequestID: "traj-1", PromptIDs: prompt})
	text, _ := tok.Decode(out.TokenIDs, false)
	fmt.Printf("turn 0: %q\n", text)

	// The next turn's prompt extends the conversation (the tool's result as
	// the delta after the model's turn), under the same request id.
	msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Type: "function", Function: chat.FunctionCall{Name: "calculator", Arguments: `{"expression": "6*7"}`}}}})
	delta, _ := tok.EncodeDelta(tokenizer.ChatContext{Messages: msgs}, []chat.Message{{Role: chat.RoleTool, Content: "42"}})
	prompt = append(append(prompt, out.TokenIDs...), delta...)
	out, _ = engine.Generate(ctx, server.GenerateRequest{RequestID: "traj-1", PromptIDs: prompt})
	text, _ = tok.Decode(out.TokenIDs, true)
	fmt.Printf("turn 1: %q\n", text)
	// Output:
	// turn 0: "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call><|im_end|>"
	// turn 1: "6*7 = 42."
}

// A model that reads its prompt: Text decodes it and encodes the reply.
func ExampleText() {
	tok, _ := tokenizertest.Qwen()
	engine := servertest.New(servertest.Config{Rule: servertest.Text(tok, func(c servertest.Call, prompt string) string {
		return fmt.Sprintf("You sent %d characters.<|im_end|>", len(prompt))
	})})
	prompt := tok.Encode("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n")
	out, _ := engine.Generate(context.Background(), server.GenerateRequest{RequestID: "a", PromptIDs: prompt})
	text, _ := tok.Decode(out.TokenIDs, true)
	fmt.Println(text)
	// Output:
	// You sent 55 characters.
}
