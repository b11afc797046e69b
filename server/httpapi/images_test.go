package httpapi_test

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/vision"
)

// qwen2VLTemplate is Qwen/Qwen2-VL-7B-Instruct's chat template
// (tokenizer_config.json): one collapsed vision block per image part.
const qwen2VLTemplate = "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}" +
	"{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}" +
	"<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n" +
	"{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}" +
	"{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>" +
	"{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}" +
	"{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>" +
	"{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}" +
	"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

var vlTok = sync.OnceValues(func() (*tokenizer.Tokenizer, error) {
	dir, err := os.MkdirTemp("", "qwen2vl")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		f, err := os.Open(filepath.Join("..", "..", "tokenizer", "testdata", "qwen3", name+".gz"))
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
		if name == "tokenizer_config.json" {
			var cfg map[string]any
			if err := json.Unmarshal(data, &cfg); err != nil {
				return nil, err
			}
			cfg["chat_template"] = qwen2VLTemplate
			if data, err = json.Marshal(cfg); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	return tokenizer.Load(dir)
})

// qwenImages is an ImageProcessor on the vision package: data URLs only,
// as a server facing the network should read.
type qwenImages struct{ proc *vision.Processor }

func (q qwenImages) Image(url string) (server.Image, error) {
	data, err := vision.ReadSource(context.Background(), url, 0, vision.Sources{NoFiles: true})
	if err != nil {
		return server.Image{}, err
	}
	img, err := vision.Decode(data, vision.Limits{})
	if err != nil {
		return server.Image{}, err
	}
	grid, _, _, err := q.proc.Grid(img.H, img.W)
	if err != nil {
		return server.Image{}, err
	}
	return server.Image{Data: data, Tokens: grid[0] * grid[1] * grid[2] / 4, Grid: grid}, nil
}

func (qwenImages) Placeholders() (int32, int32, int32) { return 151652, 151655, 151653 }

// TestChatImageParts: with Chat.Images, /v1/chat/completions keeps image
// parts for the template, expands each block on the rendered ids and
// passes the images to the engine; without it, and for sources a network
// caller may not name, the request is refused naming the part.
func TestChatImageParts(t *testing.T) {
	tok, err := vlTok()
	require.NoError(t, err)
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	png, err := os.ReadFile("../../vision/testdata/images/rgb_640x480_checker.png")
	require.NoError(t, err)
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	eng, cp, _ := replyWith(t, tok, "A checkerboard.")
	s := start(t, eng, httpapi.Config{Model: "qwen2vl", Chat: &httpapi.Chat{Tokenizer: tok, Images: qwenImages{proc}}})

	msgs := `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}},{"type":"text","text":"What is this?"}]}]`
	code, resp := post(t, s.URL()+"/v1/chat/completions", `{"model":"qwen2vl","messages":`+msgs+`,"max_tokens":20}`)
	require.Equal(t, 200, code, resp)
	require.Contains(t, resp, "A checkerboard.")
	req := cp.last()
	require.NotNil(t, req.Vision)
	require.Len(t, req.Vision.Images, 1)
	require.Equal(t, png, req.Vision.Images[0].Data)
	require.Equal(t, 391, req.Vision.Images[0].Tokens)
	// The engine's ids: the template's rendering with the block expanded.
	var m []chat.Message
	require.NoError(t, json.Unmarshal([]byte(msgs), &m))
	collapsed, err := tok.EncodeChat(tokenizer.ChatContext{Messages: m, AddGenerationPrompt: true})
	require.NoError(t, err)
	want, err := (&server.Vision{VisionStart: 151652, Pad: 151655, VisionEnd: 151653, Images: req.Vision.Images}).Expand(collapsed)
	require.NoError(t, err)
	require.Equal(t, want, req.PromptIDs)
	require.Equal(t, len(collapsed)+390, len(req.PromptIDs))

	for body, wantErr := range map[string]string{
		`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"/etc/passwd"}}]}]`:                        `messages[0].content[0].image_url`,
		`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]`:         `messages[0].content[0].image_url`,
		`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}},{"type":"input_audio"}]}]`: `content part type \"input_audio\" is not supported`,
	} {
		code, resp := post(t, s.URL()+"/v1/chat/completions", `{"model":"qwen2vl","messages":`+body+`}`)
		require.Equal(t, 400, code, resp)
		require.Contains(t, resp, wantErr)
	}

	// Without Chat.Images, image parts are refused as before.
	text := start(t, eng, httpapi.Config{Model: "qwen2vl", Chat: &httpapi.Chat{Tokenizer: tok}})
	code, resp = post(t, text.URL()+"/v1/chat/completions", `{"model":"qwen2vl","messages":`+msgs+`}`)
	require.Equal(t, 400, code, resp)
	require.True(t, strings.Contains(resp, `content part type \"image_url\" is not supported`), resp)
}
