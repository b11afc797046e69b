package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/vision"
)

var vlTok = sync.OnceValues(func() (*tokenizer.Tokenizer, error) { return tokenizertest.Qwen3(tokenizertest.Qwen2VLTemplate) })

// qwenImages is the Qwen2-VL VisionImages the tests serve with.
func qwenImages(proc *vision.Processor) *httpapi.VisionImages {
	return &httpapi.VisionImages{Processor: proc, Tokens: vision.QwenImagePlaceholders}
}

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
	s := start(t, eng, httpapi.Config{Model: "qwen2vl", Chat: &httpapi.Chat{Tokenizer: tok, Images: qwenImages(proc)}})

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
