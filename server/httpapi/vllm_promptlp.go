package httpapi

import (
	"strconv"

	"github.com/agentrl/agentrl/server"
)

// vllmLogprob is one entry of vLLM's prompt_logprobs: a token's logprob,
// its rank in the vocabulary and its text (vllm-project/vllm
// vllm/logprobs.py Logprob, which the completions choice serializes as
// prompt_logprobs: list[dict[int, Logprob] | None]).
type vllmLogprob struct {
	Logprob float32 `json:"logprob"`
	// Rank is null: the engine returns the prompt token's logprob, not
	// its rank among the vocabulary.
	Rank         *int    `json:"rank"`
	DecodedToken *string `json:"decoded_token"`
}

// promptLogprobs is a choice's prompt_logprobs for prompt_logprobs 0: one
// entry per prompt token, null for the first (nothing precedes it), else
// {"<token id>": {logprob, rank, decoded_token}}.
func (s *Server) promptLogprobs(p prepared, out *server.TokenOutput) ([]map[string]vllmLogprob, error) {
	ids := p.req.PromptIDs
	var texts []string
	if s.cfg.Chat != nil {
		var err error
		if texts, err = s.tokenTexts(nil, ids); err != nil {
			return nil, err
		}
	}
	res := make([]map[string]vllmLogprob, len(ids))
	for i := 1; i < len(ids); i++ {
		lp := vllmLogprob{Logprob: finiteLogprob(out.PromptLogprobs[i])}
		if texts != nil {
			lp.DecodedToken = &texts[i]
		}
		res[i] = map[string]vllmLogprob{strconv.Itoa(int(ids[i])): lp}
	}
	return res, nil
}
