package vllm

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// refLogprobEntry and refContentLogprobs decode with encoding/json: the
// reference the hand-written scanner is checked against.
type refLogprobEntry struct {
	Token   *string  `json:"token"`
	TokenID *int64   `json:"token_id"`
	Logprob *float64 `json:"logprob"`
}

func refContentLogprobs(raw []byte, ids []int32) ([]float32, bool) {
	var entries []refLogprobEntry
	if raw[0] == '[' {
		if json.Unmarshal(raw, &entries) != nil {
			return nil, false
		}
	} else {
		var wrap struct {
			Content *[]refLogprobEntry `json:"content"`
		}
		if json.Unmarshal(raw, &wrap) != nil || wrap.Content == nil {
			return nil, false
		}
		entries = *wrap.Content
	}
	if len(entries) != len(ids) {
		return nil, false
	}
	lps := make([]float32, len(entries))
	for i, e := range entries {
		lp, err := checkLogprob(e.Logprob)
		if err != nil {
			return nil, false
		}
		lps[i] = lp
		id, ok := int64(-1), false
		switch {
		case e.TokenID != nil:
			id, ok = *e.TokenID, true
		case e.Token != nil && strings.HasPrefix(*e.Token, "token_id:"):
			n, err := strconv.ParseInt(strings.TrimPrefix(*e.Token, "token_id:"), 10, 32)
			id, ok = n, err == nil
		}
		if ok && id != int64(ids[i]) {
			return nil, false
		}
	}
	return lps, true
}

func FuzzScanLogprobContent(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"token_id":5,"logprob":-0.5,"top_logprobs":[]},{"token_id":6,"logprob":-1e-3}]}`,
		`{"content":[{"token":"token_id:5","logprob":-0.5,"bytes":[1,2],"top_logprobs":[{"token":"x","logprob":-1}]},{"token":"token_id:6","logprob":-9999.0}]}`,
		`[{"token_id":5,"logprob":-0.5},{"token":"a\"b","token_id":6,"logprob":0}]`,
		`{"content":null}`, `{"Content":[{"LOGPROB":-1,"Token_Id":5},{"logprob":-2,"token_id":6}]}`,
		`[{"logprob":null,"token_id":5},{"logprob":-1,"token_id":6}]`, `[{"logprob":-1,"token_id":5.0},{}]`,
		`[{"logprob":-1,"token_id":5,"logprob":null},{"logprob":-1}]`, `[1,2]`, `{"content":[]}`, `[{"\u006cogprob":-1,"token_id":5},{"logprob":-1}]`,
	} {
		f.Add([]byte(s))
	}
	ids := []int32{5, 6}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.TrimSpace(data)
		if !json.Valid(data) || len(data) == 0 || string(data) == "null" {
			return
		}
		want, ok := refContentLogprobs(data, ids)
		if !ok {
			want, ok = refContentLogprobs(data, ids[:0])
			got, err := parseContentLogprobs(data, ids[:0])
			if ok {
				require.NoError(t, err, "%s", data)
				require.Equal(t, want, got)
			} else {
				require.Error(t, err, "%s", data)
			}
			_, err = parseContentLogprobs(data, ids)
			require.Error(t, err, "%s", data)
			return
		}
		got, err := parseContentLogprobs(data, ids)
		require.NoError(t, err, "%s", data)
		require.Equal(t, want, got)
	})
}
