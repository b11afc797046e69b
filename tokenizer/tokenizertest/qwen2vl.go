package tokenizertest

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/agentrl/agentrl/tokenizer"
)

// Qwen2VLTemplate is the chat template of Qwen/Qwen2-VL-7B-Instruct's
// tokenizer_config.json (the Qwen2.5-VL checkpoints ship the same one):
// one collapsed <|vision_start|><|image_pad|><|vision_end|> block per image
// part, in every role's content. Tests of the image path put it on a
// Qwen tokenizer's files.
const Qwen2VLTemplate = "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}" +
	"{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}" +
	"<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n" +
	"{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}" +
	"{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>" +
	"{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}" +
	"{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>" +
	"{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}" +
	"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

// Qwen3 loads the Qwen3 tokenizer committed (gzipped) in
// tokenizer/testdata/qwen3 (Apache-2.0; its vocabulary has the Qwen-VL
// vision tokens), with chatTemplate in place of its own template when not
// empty: Qwen3(Qwen2VLTemplate) is a Qwen2-VL tokenizer. It reads the
// repository's files, so it serves tests run in the source tree.
func Qwen3(chatTemplate string) (*tokenizer.Tokenizer, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("tokenizertest: cannot find the repository's files")
	}
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "qwen3")
	dir, err := os.MkdirTemp("", "tokenizertest-qwen3-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		data, err := gunzip(filepath.Join(src, name+".gz"))
		if err != nil {
			return nil, err
		}
		if name == "tokenizer_config.json" && chatTemplate != "" {
			var cfg map[string]any
			if err := json.Unmarshal(data, &cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			cfg["chat_template"] = chatTemplate
			if data, err = json.Marshal(cfg); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return tokenizer.Load(dir)
}

func gunzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}
