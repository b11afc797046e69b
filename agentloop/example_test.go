package agentloop_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
)

// loadQwen3 unpacks the Qwen3 tokenizer committed with the tokenizer
// package; a real program calls tokenizer.Load on a model directory.
func loadQwen3() (*tokenizer.Tokenizer, error) {
	dir, err := os.MkdirTemp("", "qwen3")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		f, err := os.Open(filepath.Join("..", "tokenizer", "testdata", "qwen3", name+".gz"))
		if err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		data, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	return tokenizer.Load(dir)
}

// A tool-calling rollout: the (scripted) model calls the calculator, sees
// its result as an observation and answers.
func Example() {
	tok, err := loadQwen3()
	if err != nil {
		fmt.Println(err)
		return
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	call := append(tok.Encode(`<tool_call>
{"name": "calculator", "arguments": {"expression": "6*7"}}
</tool_call>`), imEnd)
	answer := append(tok.Encode("6*7 = 42."), imEnd)
	engine := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"0/0": {call, answer}}, nil)})

	tools, _ := tool.NewSet(tool.NewCalculator())
	m, err := agentloop.NewManager(nil, &agentloop.Env{Server: engine, Tokenizer: tok, Tools: tools},
		agentloop.Options{DefaultAgent: agentloop.ToolAgentName, Sampling: server.SamplingParams{Logprobs: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Generate(context.Background(), []agentloop.Sample{
		{Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 6*7?"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := out.Trajectories[0]
	text, _ := tok.Decode(t.ResponseIDs, false)
	fmt.Println(t.StopReason, t.NumTurns, t.MaskOnes() == len(call)+len(answer))
	fmt.Printf("%q\n", text)
	// Output:
	// completed 4 true
	// "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n6*7 = 42.<|im_end|>"
}
