package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

type sglResult struct {
	OutputIDs []int32 `json:"output_ids"`
	MetaInfo  struct {
		ID           string  `json:"id"`
		PromptTokens int     `json:"prompt_tokens"`
		Input        [][]any `json:"input_token_logprobs"`
		Output       [][]any `json:"output_token_logprobs"`
	} `json:"meta_info"`
}

// echoFirst answers each request with its prompt's first token and the
// prompt's length, so every result says which prompt it answers.
func echoFirst(call servertest.Call) servertest.Reply {
	return servertest.Reply{Tokens: []int32{call.Req.PromptIDs[0], int32(len(call.Req.PromptIDs))}}
}

func postBatch(t *testing.T, s *httpapi.Server, body string) []sglResult {
	t.Helper()
	code, resp := post(t, s.URL()+"/generate", body)
	require.Equal(t, 200, code, resp)
	var out []sglResult
	require.NoError(t, json.Unmarshal([]byte(resp), &out), resp)
	return out
}

// TestSGLangBatchGenerate follows GenerateReqInput's batch rules
// (sgl-project/sglang io_struct.py normalize_batch_and_arguments).
func TestSGLangBatchGenerate(t *testing.T) {
	cp := &capture{rule: echoFirst}
	s := start(t, servertest.New(servertest.Config{Rule: cp.Rule}), httpapi.Config{})

	// A list of prompts, one sampling_params for all, a string rid.
	out := postBatch(t, s, `{"rid":"b","input_ids":[[5,6,7],[8],[9,10]],"sampling_params":{"max_new_tokens":2,"temperature":0}}`)
	require.Len(t, out, 3)
	for i, want := range [][]int32{{5, 3}, {8, 1}, {9, 2}} {
		require.Equal(t, want, out[i].OutputIDs, "result %d answers prompt %d", i, i)
		require.Equal(t, "b_"+string(rune('0'+i)), out[i].MetaInfo.ID)
	}

	// sampling_params per prompt; rid a list; return_logprob per prompt.
	out = postBatch(t, s, `{"rid":["x","y"],"input_ids":[[5,6],[7,8,9]],"sampling_params":[{"max_new_tokens":1},{"max_new_tokens":2}],
		"return_logprob":[true,false],"logprob_start_len":0}`)
	require.Len(t, out, 2)
	require.Equal(t, []int32{5}, out[0].OutputIDs)
	require.Equal(t, []int32{7, 3}, out[1].OutputIDs)
	require.Equal(t, "x", out[0].MetaInfo.ID)
	require.Equal(t, "y", out[1].MetaInfo.ID)
	require.Len(t, out[0].MetaInfo.Output, 1)
	require.Len(t, out[0].MetaInfo.Input, 2)
	require.Nil(t, out[1].MetaInfo.Output)

	// n > 1: prompt by prompt, n each, fresh ids; a single prompt too.
	out = postBatch(t, s, `{"input_ids":[[5],[6,7]],"sampling_params":{"n":3,"max_new_tokens":2}}`)
	require.Len(t, out, 6)
	ids := map[string]bool{}
	for i, r := range out {
		require.Equal(t, int32(5+i/3), r.OutputIDs[0], "result %d", i)
		ids[r.MetaInfo.ID] = true
	}
	require.Len(t, ids, 6)
	out = postBatch(t, s, `{"input_ids":[4,4],"sampling_params":{"n":2}}`)
	require.Len(t, out, 2)
	require.Equal(t, out[0].OutputIDs, out[1].OutputIDs)
	require.NotEqual(t, out[0].MetaInfo.ID, out[1].MetaInfo.ID)
	require.Equal(t, 128, cp.last().Params.MaxNewTokens, "SGLang's default max_new_tokens per item")
}

func TestSGLangBatchErrors(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{Rule: echoFirst}), httpapi.Config{})
	for _, tc := range []struct{ body, want string }{
		{`{"input_ids":[[1],[2]],"sampling_params":[{}]}`, `"sampling_params": 1 entries for a batch of 2 prompts`},
		{`{"input_ids":[[1],[2]],"sampling_params":[{"n":2},{"n":3}]}`, `"sampling_params[1].n": 3, but sampling_params[0].n is 2`},
		{`{"input_ids":[[1],[2]],"rid":["a"]}`, `"rid": 1 ids for a batch of 2 prompts`},
		{`{"input_ids":[[1],[2]],"rid":["a","a"]}`, `id "a" is given twice`},
		{`{"input_ids":[[1],[2]],"return_logprob":[true]}`, `"return_logprob": expected one value or a list of 2`},
		{`{"input_ids":[[1],[2]],"sampling_params":{"n":2},"return_logprob":[true,true]}`, `not allowed with n > 1`},
		{`{"input_ids":[[1],[2]],"stream":true}`, `streaming a batch is not supported`},
		{`{"text":[]}`, `an empty batch`},
		{`{"input_ids":[[1],[2]],"sampling_params":{"temperature":-1}}`, `batch item 0: field "sampling_params.temperature"`},
		{`{"input_ids":[[1]],"sampling_params":{"n":300}}`, `more than the 256 requests`},
		{`{"text":["a","b"]}`, `batch item 0: field "text": this server has no tokenizer`},
	} {
		code, body := post(t, s.URL()+"/generate", tc.body)
		require.Equal(t, 400, code, tc.body)
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		require.Contains(t, e.Error.Message, tc.want, tc.body)
	}
}

// TestSGLangBatchEngineError: one failing item fails the batch, naming
// its index.
func TestSGLangBatchEngineError(t *testing.T) {
	rule := func(call servertest.Call) servertest.Reply {
		if call.Req.PromptIDs[0] == 2 {
			return servertest.Reply{Fault: &servertest.Fault{Kind: servertest.FaultError, Err: server.ErrOverloaded}}
		}
		return servertest.Reply{Tokens: []int32{1}}
	}
	s := start(t, servertest.New(servertest.Config{Rule: rule}), httpapi.Config{})
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[[1],[2],[3]]}`)
	require.Equal(t, 429, code, body)
	require.True(t, strings.Contains(body, "batch item 1"), body)
}
