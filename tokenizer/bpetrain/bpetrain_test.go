package bpetrain_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/bpetrain"
)

var update = flag.Bool("update", false, "rewrite testdata/tiny/*")

// corpus is a fixed small corpus; testdata/tiny holds the tokenizer trained
// on it (go test ./tokenizer/bpetrain -run TestGolden -update rewrites it).
func corpus() []string {
	var docs []string
	words := []string{"apples", "boxes", "each", "holds", "How", "many", "in", "total", "?", "The", "answer", "is"}
	for i := 0; i < 60; i++ {
		var b strings.Builder
		for j := 0; j < 12; j++ {
			b.WriteString(words[(i*7+j*5)%len(words)])
			b.WriteString(" ")
		}
		b.WriteString(strings.Repeat("1234567890"[i%10:], 1))
		b.WriteString("\n<|im_start|>user\nWhat's 12 * 34?<|im_end|>\n<tool_call>{\"name\": \"calculator\"}</tool_call> héllo wörld  \t\n")
		docs = append(docs, b.String())
	}
	return docs
}

func trainTiny(t *testing.T) *bpetrain.Tokenizer {
	t.Helper()
	tok, err := bpetrain.Train(corpus(), bpetrain.Options{VocabSize: 300})
	require.NoError(t, err)
	return tok
}

func TestTrainOptions(t *testing.T) {
	for _, o := range []bpetrain.Options{{VocabSize: 255}, {VocabSize: 300, MinFrequency: -1}} {
		_, err := bpetrain.Train(corpus(), o)
		require.ErrorIs(t, err, bpetrain.ErrOptions)
	}
}

func TestMergesAreFrequentPairs(t *testing.T) {
	tok := trainTiny(t)
	require.Len(t, tok.Vocab, 300)
	require.Len(t, tok.Merges, 300-256)
	for i, m := range tok.Merges {
		require.Equal(t, m[0]+m[1], tok.Vocab[256+i])
	}
	// Added tokens never take part in merges.
	for _, v := range tok.Vocab {
		require.NotContains(t, v, "im_start")
	}
	// MinFrequency stops early on a corpus with nothing repeated.
	small, err := bpetrain.Train([]string{"ab"}, bpetrain.Options{VocabSize: 1000})
	require.NoError(t, err)
	require.Len(t, small.Vocab, 256)
	one, err := bpetrain.Train([]string{"ab", "ab", "abc"}, bpetrain.Options{VocabSize: 1000})
	require.NoError(t, err)
	require.Equal(t, [][2]string{{"a", "b"}}, one.Merges)
}

func TestGolden(t *testing.T) {
	tok := trainTiny(t)
	dir := filepath.Join("testdata", "tiny")
	if *update {
		require.NoError(t, tok.WriteDir(dir))
	}
	tj, err := tok.TokenizerJSON()
	require.NoError(t, err)
	cj, err := tok.ConfigJSON()
	require.NoError(t, err)
	wantT, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	require.NoError(t, err)
	wantC, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	require.NoError(t, err)
	require.Equal(t, string(wantT), string(tj), "tokenizer.json is not bit-for-bit the same")
	require.Equal(t, string(wantC), string(cj))
	// And training twice gives the same bytes.
	tj2, err := trainTiny(t).TokenizerJSON()
	require.NoError(t, err)
	require.Equal(t, tj, tj2)
}

func TestLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, trainTiny(t).WriteDir(dir))
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	require.Equal(t, 300+len(bpetrain.SpecialTokens), tok.VocabSize())
	for _, s := range append(corpus(), "", "unseen ✓ text, 中文 and\r\n tabs\t", "<|im_end|><tool_response>\n42\n</tool_response>") {
		ids := tok.Encode(s)
		got, err := tok.Decode(ids, false)
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	id, ok := tok.TokenID("<|im_end|>")
	require.True(t, ok)
	require.Equal(t, id, tok.EOSTokenIDs()[0], "eos_token <|im_end|> comes first")
	require.Equal(t, []int32{id}, tok.Encode("<|im_end|>"))
	// Digits are single pieces: merged numbers would make arithmetic harder.
	require.Len(t, tok.Encode("1234"), 4)
}

func TestChatTemplate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, trainTiny(t).WriteDir(dir))
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	tools := []chat.ToolSchema{{Type: "function", Function: chat.FunctionSchema{
		Name: "calculator", Description: "Evaluate", Parameters: []byte(`{"type":"object","properties":{"expression":{"type":"string"}}}`)}}}
	msgs := []chat.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "What is 6 * 7?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{Type: "function", Function: chat.FunctionCall{Name: "calculator", Arguments: `{"expression": "6 * 7"}`}}}},
		{Role: "tool", Content: "42"},
		{Role: "assistant", Content: "42"},
	}
	got, err := tok.ApplyChatTemplate(tokenizer.ChatContext{Messages: msgs, Tools: tools})
	require.NoError(t, err)
	want := "<|im_start|>system\nBe brief.\n\n# Tools\n\n<tools>\n" +
		`{"type": "function", "function": {"name": "calculator", "description": "Evaluate", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}` +
		"\n</tools>\n\nTo call a function, reply with <tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\nWhat is 6 * 7?<|im_end|>\n" +
		"<|im_start|>assistant\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6 * 7\"}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n42<|im_end|>\n"
	require.Equal(t, want, got)

	// The delta after the model's tool-call turn is the glue, the tool turn
	// and the generation prompt.
	delta, err := tok.DeltaText(tokenizer.ChatContext{Messages: msgs[:3], Tools: tools, AddGenerationPrompt: true}, msgs[3:4])
	require.NoError(t, err)
	require.Equal(t, "\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n", delta)

	_, err = tok.ApplyChatTemplate(tokenizer.ChatContext{Messages: []chat.Message{{Role: "user", Content: "x"}, {Role: "system", Content: "late"}}})
	require.ErrorContains(t, err, "only allowed first")
}

// TestHFEncode compares with HuggingFace's Rust tokenizers on the trained
// tokenizer.json (testdata/hf_encode.jsonl, made by testdata/hf_encode.js).
func TestHFEncode(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join("testdata", "tiny"))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join("testdata", "hf_encode.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Greater(t, len(lines), 10)
	for i, line := range lines {
		var c struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"ids"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &c), "line %d", i+1)
		got := tok.Encode(c.Text)
		if got == nil {
			got = []int32{}
		}
		require.Equal(t, c.IDs, got, "line %d: %q", i+1, c.Text)
	}
}

// TestHFTrain checks Train against an independent trainer: HF tokenizers'
// own BpeTrainer (testdata/hf_train.js, which states how to regenerate)
// trained on the same lines must learn the same merges in the same order.
// HF's defaults are min_frequency 0 and a vocabulary limit the corpus never
// reaches, so Train runs with MinFrequency 1 (a pair that occurs at all) and
// room for every merge.
func TestHFTrain(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "hf_train_corpus.txt"))
	require.NoError(t, err)
	var ref struct {
		Merges [][2]string `json:"merges"`
	}
	data, err := os.ReadFile(filepath.Join("testdata", "hf_train_merges.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &ref))
	require.Greater(t, len(ref.Merges), 200, "the golden must hold HF's merges")
	// HF's trainer reads a file line by line, newline kept.
	lines := strings.SplitAfter(string(raw), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	tok, err := bpetrain.Train(lines, bpetrain.Options{VocabSize: 256 + len(ref.Merges) + 1000, MinFrequency: 1})
	require.NoError(t, err)
	require.Equal(t, len(ref.Merges), len(tok.Merges), "HF stops when no pair is left")
	for i := range ref.Merges {
		require.Equal(t, ref.Merges[i], tok.Merges[i], "merge %d", i)
	}
}
