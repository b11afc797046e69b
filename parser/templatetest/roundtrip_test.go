// Package templatetest checks the parsers against turns rendered by the
// tokenizer package's chat templates. It is a separate, test-only package
// so that package parser's own tests never depend on the tokenizer
// compiling.
package templatetest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/tokenizer"
)

// templateFiles maps a format to the chat template its round trip renders
// with (see testdata/templates/README.md); hermes uses the template of the
// shared Qwen3 tokenizer.
var templateFiles = map[string]string{
	"qwen3_coder":  "qwen3_coder.jinja",
	"llama3_json":  "llama3_json_calls.jinja",
	"deepseek_v3":  "deepseek_r1.jinja",
	"gpt_oss":      "gpt_oss_messages.jinja",
	"deepseek_v31": "deepseek_v31.jinja",
	"kimi_k2":      "kimi_k2_thinking.jinja",
	"glm45":        "glm45.jinja",
	"pythonic":     "llama3.2_pythonic.jinja",
	"mistral":      "mistral_parallel.jinja",
	"deepseek_v32": "deepseek_v32.jinja",
	"minimax_m2":   "minimax_m2.jinja",
	"seed_oss":     "seed_oss.jinja",
	"gemma4":       "gemma4.jinja",
	"kimi_k3":      "kimi_k3.jinja",
}

// eosTokens are the end-of-sequence tokens templates write themselves
// (the jinja2 goldens render with the same); "<|im_end|>" otherwise.
// templateCuts removes, before the Go engine renders a template, a span
// it cannot evaluate yet: from the first marker up to the second. Each
// span must be one the rendered conversations never reach, so that the
// comparison with jinja2's rendering of the whole template still holds.
var templateCuts = map[string][2]string{
	// Seed-OSS's thinking-budget table is a dict with integer keys ({0:
	// 0, 512: 128, …}), and the engine's dicts have string keys. The
	// table only feeds the thinking-budget system prompt, which is not
	// rendered unless thinking_budget is passed.
	"seed_oss": {"{%- set budget_reflections_v05", "{# ---------- 预处理 system"},
}

var eosTokens = map[string]string{"mistral": "</s>", "seed_oss": "<seed:eos>"}

const sharedQwen3 = "../../../shared/testdata/tokenizers/qwen3"

const tinyTokenizer = `{"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":null,
"post_processor":null,"decoder":null,"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`

// TestRoundTripThroughTokenizer renders each golden conversation with the
// tokenizer package's chat templating (the Go side of what
// ../testdata/roundtrip.py does with Python jinja2), checks that the turn is
// byte-identical to the jinja2 rendering, and parses it back to the same
// calls.
func TestRoundTripThroughTokenizer(t *testing.T) {
	qwen3Config, err := os.ReadFile(filepath.Join(sharedQwen3, "tokenizer_config.json"))
	if err != nil {
		// CI always has ../shared: there its absence is a broken setup.
		if os.Getenv("CI") != "" {
			t.Fatal("CI=1: shared Qwen3 tokenizer config not present:", err)
		}
		t.Skip("shared Qwen3 tokenizer config not present:", err)
	}
	var qwen3 struct {
		ChatTemplate string `json:"chat_template"`
	}
	require.NoError(t, json.Unmarshal(qwen3Config, &qwen3))
	toks := map[string]*tokenizer.Tokenizer{}
	load := func(format string) *tokenizer.Tokenizer {
		if tk, ok := toks[format]; ok {
			return tk
		}
		src := qwen3.ChatTemplate
		if name, ok := templateFiles[format]; ok {
			b, err := os.ReadFile(filepath.Join("..", "testdata", "templates", name))
			require.NoError(t, err)
			src = string(b)
		}
		if cut, ok := templateCuts[format]; ok {
			i, j := strings.Index(src, cut[0]), strings.Index(src, cut[1])
			require.True(t, i >= 0 && j > i, "template cut for %s not found", format)
			src = src[:i] + src[j:]
		}
		dir := t.TempDir()
		eos, ok := eosTokens[format]
		if !ok {
			eos = "<|im_end|>"
		}
		cfg, err := json.Marshal(map[string]any{"chat_template": src, "eos_token": eos})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644))
		// Rendering needs no vocabulary: a one-token BPE model keeps
		// loading cheap.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tinyTokenizer), 0o644))
		tk, err := tokenizer.Load(dir)
		require.NoError(t, err)
		toks[format] = tk
		return tk
	}

	f, err := os.Open("../testdata/roundtrip.jsonl")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Format     string            `json:"format"`
			Case       string            `json:"case"`
			ThinkAware bool              `json:"think_aware"`
			Text       string            `json:"text"`
			Header     string            `json:"header"`
			Encoder    string            `json:"encoder"`
			Messages   []chat.Message    `json:"messages"`
			Tools      []chat.ToolSchema `json:"tools"`
			Calls      []struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"calls"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		t.Run(rec.Format+"/"+rec.Case, func(t *testing.T) {
			if rec.Encoder != "" {
				// The model's chat format is published as a Python
				// encoder, not a template: package parser's own
				// round trip checks these turns; there is nothing here
				// to render them with.
				t.Skipf("%s has no chat template (its turns come from %s)", rec.Format, rec.Encoder)
			}
			tk := load(rec.Format)
			full, err := tk.ApplyChatTemplate(tokenizer.ChatContext{Messages: rec.Messages, Tools: rec.Tools})
			require.NoError(t, err)
			prefix, err := tk.ApplyChatTemplate(tokenizer.ChatContext{Messages: rec.Messages[:len(rec.Messages)-1], Tools: rec.Tools})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(full, prefix+rec.Header), "rendering of the history is not a prefix")
			text := full[len(prefix)+len(rec.Header):]
			require.Equal(t, rec.Text, text, "Go and jinja2 renderings differ")

			p, err := parser.New(rec.Format, parser.Options{ThinkAware: rec.ThinkAware, Tools: rec.Tools})
			require.NoError(t, err)
			got := p.Parse(text, nil)
			require.Empty(t, got.Errors)
			require.Len(t, got.Calls, len(rec.Calls))
			for i, c := range rec.Calls {
				require.Equal(t, c.Name, got.Calls[i].Function.Name)
				require.Equal(t, c.Arguments, got.Calls[i].Function.Arguments)
			}
		})
	}
	require.NoError(t, sc.Err())
}
