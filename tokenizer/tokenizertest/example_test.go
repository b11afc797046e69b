package tokenizertest_test

import (
	"fmt"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
)

// The test tokenizer renders Qwen's chat format and encodes the markers
// written in text as their ids.
func ExampleQwen() {
	tok, err := tokenizertest.Qwen()
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, _ := tok.ApplyChatTemplate(tokenizer.ChatContext{
		Messages:            []chat.Message{{Role: chat.RoleUser, Content: "What is 6*7?"}},
		AddGenerationPrompt: true,
	})
	fmt.Printf("%q\n", prompt)
	ids := tok.Encode("42<|im_end|>")
	fmt.Println(len(ids), tok.IsSpecial(ids[2]), tok.VocabSize())
	// Output:
	// "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"
	// 3 true 263
}
