package vllm

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/httpclient"
)

// Top logprobs come back in two shapes: /inference/v1/generate writes
// OpenAI chat's logprobs.content[i].top_logprobs, a list of {token,
// token_id (newer builds), logprob, bytes}; /v1/completions writes
// logprobs.top_logprobs[i], an object from token ("token_id:N" with
// return_tokens_as_token_ids) to logprob, or null. vLLM builds a
// position's alternatives from the sampled token and the logprobs most
// probable ones (vllm/v1/engine/logprobs.py), so a list may hold the
// sampled token besides them and need not be sorted: normalizeTop makes
// each the k most probable, best first, one entry per id.

// normalizeTop dedupes row by token id (keeping an id's highest logprob),
// sorts it by logprob (ties by lower id) and cuts it to k.
func normalizeTop(row []server.TopLogprob, k int) []server.TopLogprob {
	// By id first, an id's best entry first, so duplicates are adjacent
	// and the one kept is the best; then by logprob.
	slices.SortFunc(row, func(a, b server.TopLogprob) int {
		if c := cmp.Compare(a.TokenID, b.TokenID); c != 0 {
			return c
		}
		return cmp.Compare(b.Logprob, a.Logprob)
	})
	row = slices.CompactFunc(row, func(a, b server.TopLogprob) bool { return a.TokenID == b.TokenID })
	slices.SortStableFunc(row, func(a, b server.TopLogprob) int { return cmp.Compare(b.Logprob, a.Logprob) })
	return row[:min(k, len(row))]
}

// topLogprob checks one alternative's logprob: a number ≤ 0 (vLLM writes
// -inf as -9999.0, kept as it is).
func topLogprob(f *float64) (float32, error) {
	if f == nil {
		return 0, fmt.Errorf("logprob is missing or null")
	}
	if *f > 0 || math.IsNaN(*f) {
		return 0, fmt.Errorf("logprob %v is not ≤ 0", *f)
	}
	return float32(math.Max(*f, -math.MaxFloat32)), nil
}

// tokenIDOf reads a "token_id:N" token (return_tokens_as_token_ids).
func tokenIDOf(tok string) (int32, bool) {
	s, ok := strings.CutPrefix(tok, "token_id:")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil && n >= 0
}

// parseContentTops reads the top_logprobs of each of the n entries of
// choices[0].logprobs ({"content": [...]} or a bare list), k per token.
func parseContentTops(raw json.RawMessage, n, k int) ([][]server.TopLogprob, error) {
	type alt struct {
		Token   *string  `json:"token"`
		TokenID *int32   `json:"token_id"`
		Logprob *float64 `json:"logprob"`
	}
	type entry struct {
		TopLogprobs []alt `json:"top_logprobs"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		if n == 0 {
			return [][]server.TopLogprob{}, nil
		}
		return nil, httpclient.BadResponse("top logprobs were requested but choices[0].logprobs is null")
	}
	var entries []entry
	if json.Unmarshal(raw, &entries) != nil {
		var wrapped struct{ Content []entry }
		if err := json.Unmarshal(raw, &wrapped); err != nil {
			return nil, httpclient.BadResponse("choices[0].logprobs: %v", err)
		}
		entries = wrapped.Content
	}
	if len(entries) != n {
		return nil, httpclient.BadResponse("choices[0].logprobs.content has %d entries for %d token_ids", len(entries), n)
	}
	out := make([][]server.TopLogprob, n)
	for i, e := range entries {
		row := make([]server.TopLogprob, 0, len(e.TopLogprobs))
		for j, a := range e.TopLogprobs {
			var id int32
			switch ok := false; {
			case a.TokenID != nil && *a.TokenID >= 0:
				id = *a.TokenID
			case a.Token != nil:
				if id, ok = tokenIDOf(*a.Token); !ok {
					return nil, httpclient.BadResponse("choices[0].logprobs.content[%d].top_logprobs[%d]: no token id (token %.40q; the server needs return_tokens_as_token_ids)", i, j, *a.Token)
				}
			default:
				return nil, httpclient.BadResponse("choices[0].logprobs.content[%d].top_logprobs[%d]: no token id", i, j)
			}
			lp, err := topLogprob(a.Logprob)
			if err != nil {
				return nil, httpclient.BadResponse("choices[0].logprobs.content[%d].top_logprobs[%d]: %v", i, j, err)
			}
			row = append(row, server.TopLogprob{TokenID: id, Logprob: lp})
		}
		out[i] = normalizeTop(row, k)
	}
	return out, nil
}

// parseCompletionTops reads a completions choice's logprobs.top_logprobs:
// n objects from "token_id:N" to logprob (or null), k per token.
func parseCompletionTops(raw json.RawMessage, n, k int) ([][]server.TopLogprob, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if n == 0 {
			return [][]server.TopLogprob{}, nil
		}
		return nil, httpclient.BadResponse("top logprobs were requested but choices[0].logprobs.top_logprobs is missing")
	}
	var rows []map[string]*float64
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, httpclient.BadResponse("choices[0].logprobs.top_logprobs: %v", err)
	}
	if len(rows) != n {
		return nil, httpclient.BadResponse("choices[0].logprobs.top_logprobs has %d entries for %d token_ids", len(rows), n)
	}
	out := make([][]server.TopLogprob, n)
	for i, m := range rows {
		row := make([]server.TopLogprob, 0, len(m))
		for tok, f := range m {
			id, ok := tokenIDOf(tok)
			if !ok {
				return nil, httpclient.BadResponse("choices[0].logprobs.top_logprobs[%d]: token %.40q is not \"token_id:N\" (the server needs return_tokens_as_token_ids)", i, tok)
			}
			lp, err := topLogprob(f)
			if err != nil {
				return nil, httpclient.BadResponse("choices[0].logprobs.top_logprobs[%d][%q]: %v", i, tok, err)
			}
			row = append(row, server.TopLogprob{TokenID: id, Logprob: lp})
		}
		out[i] = normalizeTop(row, k)
	}
	return out, nil
}

// parseGenerateTops reads the top logprobs of a whole
// /inference/v1/generate response.
func parseGenerateTops(data []byte, n, k int) ([][]server.TopLogprob, error) {
	var r struct {
		Choices []struct {
			Logprobs json.RawMessage `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &r); err != nil || len(r.Choices) != 1 {
		return nil, httpclient.BadResponse("choices[0].logprobs: expected one choice")
	}
	return parseContentTops(r.Choices[0].Logprobs, n, k)
}

// parseCompletionsTops reads the top logprobs of a whole /v1/completions
// response.
func parseCompletionsTops(data []byte, n, k int) ([][]server.TopLogprob, error) {
	var r struct {
		Choices []struct {
			Logprobs *struct {
				TopLogprobs json.RawMessage `json:"top_logprobs"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &r); err != nil || len(r.Choices) != 1 {
		return nil, httpclient.BadResponse("choices[0].logprobs: expected one choice")
	}
	var raw json.RawMessage
	if lp := r.Choices[0].Logprobs; lp != nil {
		raw = lp.TopLogprobs
	}
	return parseCompletionTops(raw, n, k)
}
