package capture_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/trajectory"
)

func do(t *testing.T, c *http.Client, method, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

const helloBody = `{"model":"agentrl","messages":[{"role":"user","content":"hi"}]}`

// callCount is how many begin, call and abort records the rollout's log has.
func callCount(t *testing.T, r *rig, id string) int {
	t.Helper()
	recs, err := r.c.Records(context.Background(), id)
	require.NoError(t, err)
	n := 0
	for _, rec := range recs {
		if rec.Kind == capture.KindBegin || rec.Kind == capture.KindCall || rec.Kind == capture.KindAbort {
			n++
		}
	}
	return n
}

func TestRolloutKeysAreRefusedAcrossRollouts(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, "hello"))
	ctx := context.Background()
	a, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	b, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	require.NotEqual(t, a.Key, b.Key)
	require.Len(t, a.Key, 4+64)
	cl := r.model.Client()
	base := r.model.URL

	// Served: the rollout's key on its URL, by bearer or x-api-key, and
	// the key alone on /v1.
	code, body := do(t, cl, "POST", a.OpenAIBaseURL+"/chat/completions", helloBody, "Authorization", "Bearer "+a.Key)
	require.Equal(t, 200, code, body)
	code, body = do(t, cl, "POST", a.OpenAIBaseURL+"/chat/completions", helloBody, "x-api-key", a.Key)
	require.Equal(t, 200, code, body)
	code, body = do(t, cl, "POST", base+"/v1/chat/completions", helloBody, "Authorization", "Bearer "+b.Key)
	require.Equal(t, 200, code, body)
	require.Equal(t, 4, callCount(t, r, a.ID)) // two begins, two calls
	require.Equal(t, 2, callCount(t, r, b.ID))

	for _, c := range []struct {
		name, url string
		hdr       []string
	}{
		{"a's key on b's URL", b.OpenAIBaseURL + "/chat/completions", []string{"Authorization", "Bearer " + a.Key}},
		{"b's key on a's URL as x-api-key", a.OpenAIBaseURL + "/chat/completions", []string{"x-api-key", b.Key}},
		{"no key on a's URL", a.OpenAIBaseURL + "/chat/completions", nil},
		{"an unknown key", base + "/v1/chat/completions", []string{"Authorization", "Bearer ark_" + strings.Repeat("0", 64)}},
		{"a key's prefix", base + "/v1/chat/completions", []string{"Authorization", "Bearer " + a.Key[:len(a.Key)-1]}},
		{"an unknown id", base + "/rollouts/ro_nope/v1/chat/completions", []string{"Authorization", "Bearer " + a.Key}},
		{"the control token", a.OpenAIBaseURL + "/chat/completions", []string{"Authorization", "Bearer " + controlToken}},
	} {
		code, body := do(t, cl, "POST", c.url, helloBody, c.hdr...)
		require.Equal(t, 401, code, "%s: %s", c.name, body)
		var e struct {
			Error struct {
				Message, Type string
				Code          *string
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &e), c.name)
		require.Equal(t, "invalid_api_key", *e.Error.Code, c.name)
		require.NotContains(t, body, "hello", c.name)
	}
	// A path that climbs out of a's prefix reaches nothing.
	code, body = do(t, cl, "POST", base+"/rollouts/"+a.ID+"/../"+b.ID+"/v1/chat/completions", helloBody, "Authorization", "Bearer "+a.Key)
	require.Equal(t, 404, code, body)
	// Endpoints that would bypass the recorder are not served, even with
	// a good key (text completions, SGLang's and vLLM's token APIs).
	for _, path := range []string{"/completions", "/../generate", "/../inference/v1/generate"} {
		code, body = do(t, cl, "POST", a.OpenAIBaseURL+path, `{"prompt":"hi","input_ids":[1]}`, "Authorization", "Bearer "+a.Key)
		require.Equal(t, 404, code, "%s: %s", path, body)
	}
	// Anthropic-shaped refusal on the Messages path.
	code, body = do(t, cl, "POST", base+"/v1/messages", `{}`, "x-api-key", "nope")
	require.Equal(t, 401, code)
	require.JSONEq(t, `{"type":"error","error":{"type":"authentication_error","message":"missing or unknown rollout key (send it as Authorization: Bearer KEY or x-api-key: KEY), or a key of another rollout"}}`, body)

	// Nothing was recorded by the refused calls.
	require.Equal(t, 4, callCount(t, r, a.ID))
	require.Equal(t, 2, callCount(t, r, b.ID))
	st := r.c.Stats()
	require.Equal(t, int64(3), st.CallsRecorded)
	require.Equal(t, int64(12), st.CallsRefused) // 7 keys, 1 path, 3 endpoints, 1 Messages
	require.Equal(t, int64(2), st.RolloutsOpen)
	require.Equal(t, int64(2), st.RolloutsCreated)
	require.Positive(t, st.RecordTime)

	// A rollout key is not a control token: a harness cannot set its
	// own reward, read or delete records.
	for _, req := range [][2]string{{"POST", "/rollouts/" + a.ID + "/reward"}, {"GET", "/rollouts/" + a.ID + "/trajectories"},
		{"DELETE", "/rollouts/" + b.ID}, {"POST", "/rollouts"}} {
		code, _ := do(t, r.control.Client(), req[0], r.control.URL+req[1], `{"reward":1}`, "Authorization", "Bearer "+a.Key)
		require.Equal(t, 401, code, req)
	}

	// The keys never reach the disk: only their digests do.
	ents, err := os.ReadDir(r.dir)
	require.NoError(t, err)
	require.Len(t, ents, 2)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(r.dir, e.Name()))
		require.NoError(t, err)
		require.False(t, bytes.Contains(data, []byte(a.Key)) || bytes.Contains(data, []byte(b.Key)), e.Name())
		require.False(t, bytes.Contains(data, []byte(a.Key[4:])) || bytes.Contains(data, []byte(b.Key[4:])), e.Name())
	}

	// A finished rollout's key is refused and records nothing.
	require.NoError(t, r.c.Finish(ctx, a.ID))
	code, _ = do(t, cl, "POST", a.OpenAIBaseURL+"/chat/completions", helloBody, "Authorization", "Bearer "+a.Key)
	require.Equal(t, 401, code)
	require.Equal(t, 4, callCount(t, r, a.ID))
}

func TestControlAPI(t *testing.T) {
	tok := small(t)
	r := newRig(t, tok, newScript(t, tok, "hello"))
	cl := r.control.Client()
	auth := []string{"Authorization", "Bearer " + controlToken}

	code, body := do(t, cl, "POST", r.control.URL+"/rollouts", `{"group":"g1","metadata":{"task":"t1"}}`, auth...)
	require.Equal(t, 201, code, body)
	var ro capture.Rollout
	require.NoError(t, json.Unmarshal([]byte(body), &ro))
	require.Equal(t, "g1", ro.Group)
	require.Equal(t, r.model.URL+"/rollouts/"+ro.ID+"/v1", ro.OpenAIBaseURL)
	require.Equal(t, r.model.URL+"/rollouts/"+ro.ID, ro.AnthropicBaseURL)

	code, body = do(t, r.model.Client(), "POST", ro.OpenAIBaseURL+"/chat/completions", helloBody, "Authorization", "Bearer "+ro.Key)
	require.Equal(t, 200, code, body)

	for _, c := range []struct{ body, want string }{
		{`{"reward":"high"}`, `cannot unmarshal string`},
		{`{"reward":1,"extra":2}`, `unknown field`},
		{`{}`, `field "reward": required`},
		{`{"reward":1}{"reward":2}`, `data after the JSON value`},
		{`{"reward":1e999}`, `bad control request`},
	} {
		code, body := do(t, cl, "POST", r.control.URL+"/rollouts/"+ro.ID+"/reward", c.body, auth...)
		require.Equal(t, 400, code, c.body)
		var e struct{ Error struct{ Message string } }
		require.NoError(t, json.Unmarshal([]byte(body), &e))
		require.Contains(t, e.Error.Message, c.want, c.body)
	}
	code, body = do(t, cl, "POST", r.control.URL+"/rollouts/"+ro.ID+"/reward", `{"reward":0.5}`, auth...)
	require.Equal(t, 200, code, body)
	code, _ = do(t, cl, "POST", r.control.URL+"/rollouts/ro_unknown/reward", `{"reward":0.5}`, auth...)
	require.Equal(t, 404, code)
	code, body = do(t, cl, "POST", r.control.URL+"/rollouts/"+ro.ID+"/finish", ``, auth...)
	require.Equal(t, 200, code, body)

	code, body = do(t, cl, "GET", r.control.URL+"/rollouts/"+ro.ID+"/trajectories", ``, auth...)
	require.Equal(t, 200, code, body)
	trajs, err := trajectory.ReadJSONL(strings.NewReader(body))
	require.NoError(t, err)
	require.Len(t, trajs, 1)
	require.Equal(t, 0.5, *trajs[0].Reward)
	require.Equal(t, "g1", trajs[0].GroupID)
	code, body = do(t, cl, "GET", r.control.URL+"/rollouts/"+ro.ID+"/report", ``, auth...)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"trajectories":1`)

	code, _ = do(t, cl, "DELETE", r.control.URL+"/rollouts/"+ro.ID, ``, auth...)
	require.Equal(t, 204, code)
	code, _ = do(t, cl, "GET", r.control.URL+"/rollouts/"+ro.ID+"/trajectories", ``, auth...)
	require.Equal(t, 404, code)
	_, err = os.Stat(filepath.Join(r.dir, ro.ID+".jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)

	code, _ = do(t, cl, "POST", r.control.URL+"/rollouts", `{}`, "Authorization", "Bearer wrong")
	require.Equal(t, 401, code)
}
