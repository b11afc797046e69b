package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// failingUpdater is an engine whose weight loads fail.
type failingUpdater struct{ *servertest.Server }

func (failingUpdater) UpdateWeights(context.Context, server.Weights) error {
	return errors.New("safetensors: header too large")
}

// TestSGLangWeightVersionStrings follows SGLang's http_server.py
// (sgl-project/sglang @ 0025436e): weight_version is any string, echoed by
// /get_weight_version, /get_model_info and every meta_info; a failed load
// is 400 with success false.
func TestSGLangWeightVersionStrings(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(5)})
	weights := t.TempDir()
	ckpt := filepath.Join(weights, "ckpt")
	require.NoError(t, os.Mkdir(ckpt, 0o700))
	s := start(t, eng, httpapi.Config{Model: "m1", ModelPath: "/models/m1", AllowedWeightDirs: []string{weights}})

	code, body := get(t, s.URL()+"/get_weight_version")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"weight_version":"default"}`, body)

	code, body = post(t, s.URL()+"/update_weights_from_disk", `{"model_path":`+strconv.Quote(ckpt)+`,"weight_version":"step-12-a1b2"}`)
	require.Equal(t, 200, code, body)
	code, body = get(t, s.URL()+"/get_weight_version")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"weight_version":"step-12-a1b2"}`, body)
	code, body = post(t, s.URL()+"/generate", `{"input_ids":[1],"sampling_params":{"max_new_tokens":1}}`)
	require.Equal(t, 200, code, body)
	var gen struct {
		MetaInfo struct {
			WeightVersion string `json:"weight_version"`
		} `json:"meta_info"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &gen))
	require.Equal(t, "step-12-a1b2", gen.MetaInfo.WeightVersion)

	// Integers stay integers for the engine.
	code, _ = post(t, s.URL()+"/update_weights_from_disk", `{"model_path":`+strconv.Quote(ckpt)+`,"weight_version":"13"}`)
	require.Equal(t, 200, code)
	require.Equal(t, int64(13), eng.WeightVersion())

	code, body = get(t, s.URL()+"/get_model_info")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"model_path":"/models/m1","tokenizer_path":"/models/m1","is_generation":true,
		"preferred_sampling_params":null,"weight_version":"13"}`, body)
	code, body = get(t, s.URL()+"/get_server_info")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"model_path":"/models/m1"`)
	require.Contains(t, body, `"served_model_name":"m1"`)
	code, body = get(t, s.URL()+"/version")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"version":`)

	bad := start(t, failingUpdater{eng}, httpapi.Config{AllowedWeightDirs: []string{weights}})
	code, body = post(t, bad.URL()+"/update_weights_from_disk", `{"model_path":`+strconv.Quote(ckpt)+`,"weight_version":"x"}`)
	require.Equal(t, 400, code, body)
	var r struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	require.False(t, r.Success)
	require.Contains(t, r.Message, "header too large")
	code, body = get(t, bad.URL()+"/get_weight_version")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"weight_version":"default"}`, body)
}

func TestTokenizeDetokenize(t *testing.T) {
	tok := qwen(t)
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{Model: "qwen3", MaxModelLen: 4096, Chat: &httpapi.Chat{Tokenizer: tok}})
	code, body := post(t, s.URL()+"/tokenize", `{"prompt":"Hello world"}`)
	require.Equal(t, 200, code, body)
	var r struct {
		Tokens      []int32 `json:"tokens"`
		Count       int     `json:"count"`
		MaxModelLen int     `json:"max_model_len"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	require.Equal(t, tok.Encode("Hello world"), r.Tokens)
	require.Equal(t, len(r.Tokens), r.Count)
	require.Equal(t, 4096, r.MaxModelLen)
	ids, _ := json.Marshal(r.Tokens)
	code, body = post(t, s.URL()+"/detokenize", `{"tokens":`+string(ids)+`}`)
	require.Equal(t, 200, code, body)
	require.JSONEq(t, `{"prompt":"Hello world"}`, body)
	code, _ = post(t, s.URL()+"/detokenize", `{"tokens":[-1]}`)
	require.Equal(t, 400, code)
	code, _ = post(t, s.URL()+"/tokenize", `{"prompt":"x","model":"other"}`)
	require.Equal(t, 404, code)
}

// TestSGLangIgnoreEOS: under ignore_eos SGLang's Req.check_finished
// (python/sglang/srt/managers/schedule_batch.py) checks no stop token, so
// generation runs to max_new_tokens.
func TestSGLangIgnoreEOS(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(5, 6, 7, 8)})
	s := start(t, eng, httpapi.Config{})
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[1],"sampling_params":{"max_new_tokens":3,"stop_token_ids":[5]}}`)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"output_ids":[5]`)
	code, body = post(t, s.URL()+"/generate", `{"input_ids":[1],"sampling_params":{"max_new_tokens":3,"stop_token_ids":[5],"ignore_eos":true}}`)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"output_ids":[5,6,7]`)
	require.Contains(t, body, `"type":"length"`)
}

// TestSGLangReturnTextInLogprobs: each output_token_logprobs entry is
// [logprob, token_id, text] with the text filled on request.
func TestSGLangReturnTextInLogprobs(t *testing.T) {
	tok := qwen(t)
	ids := tok.Encode("Hi there")
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(ids...)})
	s := start(t, eng, httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok}})
	for _, withText := range []bool{false, true} {
		code, body := post(t, s.URL()+"/generate", `{"input_ids":[1],"return_logprob":true,"return_text_in_logprobs":`+strconv.FormatBool(withText)+`,"sampling_params":{"max_new_tokens":8}}`)
		require.Equal(t, 200, code, body)
		var r struct {
			MetaInfo struct {
				OutputTokenLogprobs [][]any `json:"output_token_logprobs"`
			} `json:"meta_info"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &r))
		require.Len(t, r.MetaInfo.OutputTokenLogprobs, len(ids))
		var text string
		for _, e := range r.MetaInfo.OutputTokenLogprobs {
			require.Len(t, e, 3)
			if withText {
				text += e[2].(string)
			} else {
				require.Nil(t, e[2])
			}
		}
		if withText {
			require.Equal(t, "Hi there", text)
		}
	}
}

// TestPauseResumeBodies: the control answers carry the upstream JSON.
func TestPauseResumeBodies(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{})
	for _, tc := range []struct{ path, want string }{
		{"/pause_generation", `{"message":"Generation paused successfully.","status":"ok"}`},
		{"/continue_generation", `{"message":"Generation continued successfully.","status":"ok"}`},
		{"/pause?mode=keep", `{"status":"paused"}`},
		{"/resume", `{"status":"resumed"}`},
	} {
		code, body := post(t, s.URL()+tc.path, ``)
		require.Equal(t, 200, code, tc.path)
		require.JSONEq(t, tc.want, body, tc.path)
	}
}

// modePauser records the pause modes it is asked for and, like SGLang,
// has no waiting pause.
type modePauser struct {
	*servertest.Server
	modes []server.PauseMode
}

func (p *modePauser) Pause(ctx context.Context, mode server.PauseMode) error {
	if mode == server.PauseWait {
		return server.UnsupportedPause("modePauser", mode)
	}
	p.modes = append(p.modes, mode)
	return p.Server.Pause(ctx, mode)
}

// TestPauseModes: each dialect's mode names reach the engine as the one
// server.PauseMode they mean (SGLang's default is abort, as
// http_server.py's PauseGenerationReqInput has it; so is vLLM's), and a mode
// the engine lacks is a 501 that names it.
func TestPauseModes(t *testing.T) {
	eng := &modePauser{Server: servertest.New(servertest.Config{})}
	s := start(t, eng, httpapi.Config{})
	for _, tc := range []struct {
		path, body string
		want       server.PauseMode
	}{
		{"/pause_generation", ``, server.PauseAbort},
		{"/pause_generation", `{"mode":"abort"}`, server.PauseAbort},
		{"/pause_generation", `{"mode":"in_place"}`, server.PauseKeep},
		{"/pause_generation", `{"mode":"retract"}`, server.PauseRetract},
		{"/pause", ``, server.PauseAbort},
		{"/pause?mode=abort", ``, server.PauseAbort},
		{"/pause?mode=keep", ``, server.PauseKeep},
	} {
		code, body := post(t, s.URL()+tc.path, tc.body)
		require.Equal(t, 200, code, "%s %s: %s", tc.path, tc.body, body)
		require.Equal(t, tc.want, eng.modes[len(eng.modes)-1], "%s %s", tc.path, tc.body)
		code, _ = post(t, s.URL()+"/resume", ``)
		require.Equal(t, 200, code)
	}
	code, body := post(t, s.URL()+"/pause?mode=wait", ``)
	require.Equal(t, 501, code)
	require.Contains(t, body, `pause mode \"wait\"`)
}
