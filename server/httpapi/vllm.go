package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentrl/agentrl/server"
)

// vllmDefaultMaxTokens is vLLM's default when max_tokens is absent.
const vllmDefaultMaxTokens = 16

// vllmSampling holds the sampling fields vLLM accepts, both nested
// (/inference/v1/generate "sampling_params") and top-level (/v1/completions).
type vllmSampling struct {
	samplingKnobs
	MaxTokens *int   `json:"max_tokens"`
	Seed      *int64 `json:"seed"`
	Logprobs  *int   `json:"logprobs"`
}

func (v *vllmSampling) params(prefix string) (server.SamplingParams, error) {
	return v.paramsNamed(prefix, "max_tokens")
}

// paramsNamed is params with the budget's field named maxName in errors.
func (v *vllmSampling) paramsNamed(prefix, maxName string) (server.SamplingParams, error) {
	p := server.SamplingParams{Temperature: 1, TopP: 1, MaxNewTokens: vllmDefaultMaxTokens}
	if v.MaxTokens != nil {
		p.MaxNewTokens = *v.MaxTokens
	}
	v.apply(&p)
	if v.Seed != nil {
		if *v.Seed < 0 {
			return p, badRequest("field %q: must be ≥ 0, got %d", prefix+"seed", *v.Seed)
		}
		seed := uint64(*v.Seed)
		p.Seed = &seed
	}
	if v.Logprobs != nil {
		if *v.Logprobs < 0 {
			return p, badRequest("field %q: must be ≥ 0, got %d", prefix+"logprobs", *v.Logprobs)
		}
		if *v.Logprobs > server.MaxTopLogprobs {
			return p, badRequest("field %q: at most %d, got %d", prefix+"logprobs", server.MaxTopLogprobs, *v.Logprobs)
		}
		p.Logprobs = true
		if *v.Logprobs > 1 {
			// vLLM adds the n most likely tokens at each step. 0 and 1
			// keep to the sampled token's logprob, which every engine
			// has (a top-1 list would ask engines for alternatives).
			p.TopLogprobs = *v.Logprobs
		}
	}
	if err := v.unsupported(prefix); err != nil {
		return p, err
	}
	return p, validParams(&p, prefix, maxName)
}

// ---- /inference/v1/generate ----------------------------------------------

type vllmGenerateRequest struct {
	RequestID      string          `json:"request_id"`
	TokenIDs       json.RawMessage `json:"token_ids"`
	Model          string          `json:"model"`
	SamplingParams *vllmSampling   `json:"sampling_params"`
	Stream         bool            `json:"stream"`
	StreamOptions  *streamOptions  `json:"stream_options"`
	Priority       *int            `json:"priority"`
}

type vllmGenerateChoice struct {
	Index        int     `json:"index"`
	FinishReason string  `json:"finish_reason"`
	TokenIDs     []int32 `json:"token_ids"`
	Logprobs     *struct {
		Content *vllmContent `json:"content"`
	} `json:"logprobs"`
}

// vllmContent writes the logprobs.content entries, in both the newer
// (token_id) and older ("token_id:N" token) shapes, without reflection.
type vllmContent struct {
	ids  []int32
	lps  []float32
	tops [][]server.TopLogprob // nil: every top_logprobs is []
}

func (c *vllmContent) MarshalJSON() ([]byte, error) { return c.appendJSON(nil), nil }

type vllmGenerateResponse struct {
	RequestID string               `json:"request_id"`
	Choices   []vllmGenerateChoice `json:"choices"`
	// Usage as vLLM's GenerateResponse has it (vllm-project/vllm
	// vllm/entrypoints/serve/disagg/serving.py@0001948bc76939369ca855c90b36d81256477e85
	// serve_tokens_full_generator).
	Usage *usage `json:"usage,omitempty"`
	// Not in vLLM: what agentrl's own engines add; vLLM clients ignore them.
	CachedTokens  int   `json:"num_cached_tokens"`
	WeightVersion int64 `json:"weight_version"`
}

func (s *Server) parseVLLMGenerate(data []byte) (prepared, error) {
	return s.readVLLMGenerate(bytes.NewReader(data))
}

func (s *Server) readVLLMGenerate(r io.Reader) (prepared, error) {
	b, err := s.splitBody(r, "token_ids")
	if err != nil {
		return prepared{}, err
	}
	var in vllmGenerateRequest
	if err := unmarshalBody(b.rest, &in); err != nil {
		return prepared{}, err
	}
	p := prepared{stream: in.Stream}
	if in.StreamOptions != nil {
		p.includeUsage = in.StreamOptions.IncludeUsage
	}
	p.identify(in.RequestID, in.Priority)
	switch {
	case b.hasIDs:
		p.req.PromptIDs, err = s.checkIDs("token_ids", b.ids)
	case isSet(in.TokenIDs):
		p.req.PromptIDs, err = s.parseIDs("token_ids", in.TokenIDs)
	default:
		return p, badRequest(`missing prompt: give "token_ids"`)
	}
	if err != nil {
		return p, err
	}
	sp := in.SamplingParams
	if sp == nil {
		sp = &vllmSampling{}
	}
	if p.req.Params, err = sp.params("sampling_params."); err != nil {
		return p, err
	}
	if err := s.checkModel(in.Model); err != nil {
		return p, err
	}
	if err := s.fitContext(&p.req, sp.MaxTokens != nil, "sampling_params.max_tokens"); err != nil {
		return p, err
	}
	p.logprobs = p.req.Params.Logprobs
	return p, nil
}

// fitContext checks the request against Config.MaxModelLen: the prompt
// must leave room for a token, and an explicit max_tokens must fit (vLLM's
// messages, vllm/entrypoints/utils.py get_max_tokens and
// serving_engine.py _validate_input); without one, the budget is what the
// context has left.
func (s *Server) fitContext(req *server.GenerateRequest, explicit bool, name string) error {
	n := s.cfg.MaxModelLen
	if n <= 0 {
		return nil
	}
	in := len(req.PromptIDs)
	if in >= n {
		return &errRequest{status: http.StatusBadRequest, code: "context_length_exceeded", msg: fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", n, in)}
	}
	if req.Params.MaxNewTokens <= n-in {
		return nil
	}
	if !explicit || s.cfg.ClampMaxTokens {
		req.Params.MaxNewTokens = n - in
		return nil
	}
	return &errRequest{status: http.StatusBadRequest, code: "context_length_exceeded", msg: fmt.Sprintf(
		"field %q: %d is too large: this model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
		name, req.Params.MaxNewTokens, n, in, req.Params.MaxNewTokens, n, in)}
}

func finishString(r server.StopReason) string {
	switch r {
	case server.StopLength:
		return "length"
	case server.StopAbort:
		return "abort"
	}
	return "stop"
}

func (s *Server) handleVLLMGenerate(w http.ResponseWriter, r *http.Request) {
	p, err := s.readVLLMGenerate(r.Body)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	if p.stream {
		s.streamVLLMGenerate(w, r, s.streamer(), p)
		return
	}
	out, err := s.engine.Generate(r.Context(), p.req)
	if err == nil {
		err = checkOutput(out, p.req)
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	ch := vllmGenerateChoice{FinishReason: finishString(out.StopReason), TokenIDs: nonNil(out.TokenIDs)}
	if p.logprobs {
		ch.Logprobs = &struct {
			Content *vllmContent `json:"content"`
		}{Content: &vllmContent{ids: out.TokenIDs, lps: out.Logprobs, tops: out.TopLogprobs}}
	}
	resp := vllmGenerateResponse{RequestID: p.req.RequestID, Choices: []vllmGenerateChoice{ch}, Usage: samplesUsage(len(p.req.PromptIDs), []server.TokenOutput{out}),
		CachedTokens: out.CachedTokens, WeightVersion: out.WeightVersion}
	body := resp.appendJSON(make([]byte, 0, 256+len(out.TokenIDs)*80))
	writeRawJSON(w, http.StatusOK, body)
}

// idsField is ids for a token_ids field that is written even when empty.
func idsField(ids []int32) *[]int32 {
	ids = nonNil(ids)
	return &ids
}

func tokenAsID(id int32) string { return "token_id:" + strconv.Itoa(int(id)) }

func finiteLogprob(f float32) float32 {
	if f != f || f < -3.4e38 {
		return -3.4028235e38
	}
	return f
}

// ---- /v1/completions -------------------------------------------------------

type completionsRequest struct {
	vllmSampling
	Model                  string          `json:"model"`
	Prompt                 json.RawMessage `json:"prompt"`
	RequestID              string          `json:"request_id"`
	Stream                 bool            `json:"stream"`
	StreamOptions          *streamOptions  `json:"stream_options"`
	Echo                   bool            `json:"echo"`
	ReturnTokenIDs         bool            `json:"return_token_ids"`
	ReturnTokensAsTokenIDs bool            `json:"return_tokens_as_token_ids"`
	IncludeStopStrInOutput bool            `json:"include_stop_str_in_output"`
	Priority               *int            `json:"priority"`
	Suffix                 string          `json:"suffix"`
	BestOf                 *int            `json:"best_of"`
	PromptLogprobs         *int            `json:"prompt_logprobs"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type completionLogprobs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
}

type completionChoice struct {
	Index         int                 `json:"index"`
	Text          string              `json:"text"`
	Logprobs      *completionLogprobs `json:"logprobs"`
	FinishReason  *string             `json:"finish_reason"`
	StopReason    any                 `json:"stop_reason"` // null, the stop token id or the stop string
	PromptTokenID []int32             `json:"prompt_token_ids,omitempty"`
	TokenIDs      *[]int32            `json:"token_ids,omitempty"` // set (maybe to []) on return_token_ids
	// PromptLogprobs answers prompt_logprobs (see promptLogprobs).
	PromptLogprobs []map[string]vllmLogprob `json:"prompt_logprobs,omitempty"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage"`
	// Not in vLLM; see vllmGenerateResponse.
	WeightVersion int64 `json:"weight_version"`
}

func (s *Server) parseCompletions(data []byte) (prepared, error) {
	return s.readCompletions(bytes.NewReader(data))
}

func (s *Server) readCompletions(r io.Reader) (prepared, error) {
	b, err := s.splitBody(r, "prompt")
	if err != nil {
		return prepared{}, err
	}
	var in completionsRequest
	if err := unmarshalBody(b.rest, &in); err != nil {
		return prepared{}, err
	}
	p := prepared{stream: in.Stream, tokensAsIDs: in.ReturnTokensAsTokenIDs, returnIDs: in.ReturnTokenIDs, skipSpecial: true,
		trimStop: !in.IncludeStopStrInOutput}
	if in.StreamOptions != nil {
		p.includeUsage = in.StreamOptions.IncludeUsage
	}
	if in.SkipSpecialTokens != nil {
		p.skipSpecial = *in.SkipSpecialTokens
	}
	p.identify(in.RequestID, in.Priority)
	switch {
	case in.Echo:
		return p, badRequest(`field "echo": not supported`)
	case in.Suffix != "":
		return p, badRequest(`field "suffix": not supported`)
	case in.BestOf != nil && *in.BestOf != 1:
		return p, badRequest(`field "best_of": only 1 is supported`)
	case in.PromptLogprobs != nil && *in.PromptLogprobs != 0:
		return p, badRequest(`field "prompt_logprobs": only 0 is supported (each prompt token's own logprob, without top alternatives)`)
	case in.PromptLogprobs != nil && in.Stream:
		return p, badRequest(`field "prompt_logprobs": not supported with "stream"`)
	case !b.hasIDs && !isSet(in.Prompt):
		return p, badRequest(`missing "prompt": give token ids or a string`)
	}
	switch {
	case b.hasIDs:
		p.req.PromptIDs, err = s.checkIDs("prompt", b.ids)
	case in.Prompt[0] == '"':
		p.req.PromptIDs, err = s.encodeTextField("prompt", in.Prompt)
	default:
		p.req.PromptIDs, err = s.parseIDs("prompt", in.Prompt)
	}
	if err != nil {
		return p, err
	}
	if p.stops, err = s.stopStrings(&in.samplingKnobs); err != nil {
		return p, err
	}
	p.includeStop = in.IncludeStopStrInOutput
	if p.n, err = in.takeN(); err != nil {
		return p, err
	}
	if p.req.Params, err = in.vllmSampling.params(""); err != nil {
		return p, err
	}
	if err := s.checkModel(in.Model); err != nil {
		return p, err
	}
	if err := s.fitContext(&p.req, in.MaxTokens != nil, "max_tokens"); err != nil {
		return p, err
	}
	p.logprobs = p.req.Params.Logprobs
	if in.PromptLogprobs != nil {
		p.req.Params.PromptLogprobs = true
	}
	return p, nil
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	p, err := s.readCompletions(r.Body)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	if p.stream {
		s.streamCompletions(w, r, s.streamer(), p)
		return
	}
	outs, ok := s.runSamples(w, r, &p)
	if !ok {
		return
	}
	choices := make([]completionChoice, len(outs))
	completion, cached := 0, 0
	for i := range outs {
		ch, err := s.completionChoice(p, &outs[i])
		if err != nil {
			writeEngineError(w, err)
			return
		}
		ch.Index = i
		choices[i] = ch
		completion += len(outs[i].TokenIDs)
		cached = max(cached, outs[i].CachedTokens)
	}
	out := outs[0]
	u := &usage{PromptTokens: len(p.req.PromptIDs), CompletionTokens: completion,
		TotalTokens: len(p.req.PromptIDs) + completion}
	u.PromptTokensDetails = &struct {
		CachedTokens int `json:"cached_tokens"`
	}{cached}
	resp := completionResponse{ID: "cmpl-" + p.req.RequestID, Object: "text_completion", Created: time.Now().Unix(),
		Model: s.cfg.Model, Choices: choices, Usage: u, WeightVersion: out.WeightVersion}
	writeJSON(w, http.StatusOK, resp)
}

// completionChoice builds one choice of a /v1/completions answer.
func (s *Server) completionChoice(p prepared, out *server.TokenOutput) (completionChoice, error) {
	matched, err := s.cutAtStopString(out, p.stops, p.skipSpecial)
	if err != nil {
		return completionChoice{}, fmt.Errorf("decoding the output: %w", err)
	}
	textIDs := out.TokenIDs
	var stopReason any
	if matched == "" && s.stopMatched(*out, p.req) {
		last := textIDs[len(textIDs)-1]
		if contains(p.req.Params.StopTokenIDs, last) {
			// Like vLLM: the matched stop_token_id, but null for EOS.
			stopReason = last
		}
		if p.trimStop {
			textIDs = textIDs[:len(textIDs)-1]
		}
	}
	text, err := s.decodeText(textIDs, p.skipSpecial)
	if err != nil {
		return completionChoice{}, fmt.Errorf("decoding the output: %w", err)
	}
	if matched != "" {
		// vLLM: the text ends before the stop string (or with it, on
		// include_stop_str_in_output) and stop_reason is the string.
		text = trimAtStop(text, p.stops, p.includeStop)
		stopReason = matched
	}
	fr := finishString(out.StopReason)
	ch := completionChoice{Text: text, FinishReason: &fr, StopReason: stopReason}
	if p.returnIDs {
		ch.PromptTokenID = p.req.PromptIDs
		ch.TokenIDs = idsField(out.TokenIDs)
	}
	if p.req.Params.PromptLogprobs {
		if ch.PromptLogprobs, err = s.promptLogprobs(p, out); err != nil {
			return completionChoice{}, err
		}
	}
	if p.logprobs {
		ch.Logprobs, _ = s.completionLogprobs(p, out.TokenIDs, out.Logprobs, out.TopLogprobs, 0)
	}
	return ch, nil
}

// completionLogprobs is the logprobs of ids, the first of which starts at
// byte offset of the text, and the offset after them. A token's
// top_logprobs hold it and, when asked for (tops not nil), its
// alternatives, as vLLM's do.
func (s *Server) completionLogprobs(p prepared, ids []int32, lps []float32, tops [][]server.TopLogprob, offset int) (*completionLogprobs, int) {
	lp := &completionLogprobs{
		TextOffset:    make([]int, len(ids)),
		TokenLogprobs: make([]float32, len(ids)),
		Tokens:        make([]string, len(ids)),
		TopLogprobs:   make([]map[string]float32, len(ids)),
	}
	for i, id := range ids {
		tok := s.completionToken(p, id)
		lp.TextOffset[i] = offset
		offset += len(tok)
		lp.Tokens[i] = tok
		lp.TokenLogprobs[i] = finiteLogprob(lps[i])
		lp.TopLogprobs[i] = map[string]float32{tok: lp.TokenLogprobs[i]}
		if tops != nil {
			for _, alt := range tops[i] {
				lp.TopLogprobs[i][s.completionToken(p, alt.TokenID)] = finiteLogprob(alt.Logprob)
			}
		}
	}
	return lp, offset
}

// completionToken is id as a completions logprob names it: its text, or
// "token_id:N" (return_tokens_as_token_ids, or without a tokenizer).
func (s *Server) completionToken(p prepared, id int32) string {
	if !p.tokensAsIDs && s.cfg.Chat != nil {
		if t, err := s.cfg.Chat.Tokenizer.Decode([]int32{id}, false); err == nil {
			return t
		}
	}
	return tokenAsID(id)
}

// ---- vLLM control endpoints ----------------------------------------------

func (s *Server) handleAbortRequests(w http.ResponseWriter, r *http.Request) {
	var in struct {
		RequestIDs []string `json:"request_ids"`
	}
	if err := decodeJSON(r, &in); err != nil {
		writeRequestError(w, err)
		return
	}
	a, ok := capability[server.Aborter](s, w, "abort")
	if !ok {
		return
	}
	if len(in.RequestIDs) == 0 {
		// vLLM's RL serving router: "Empty/missing request_ids aborts
		// all in-flight requests" (its abort_requests handler).
		if err := a.AbortAll(r.Context()); err != nil {
			writeEngineError(w, err)
		}
		return
	}
	for _, id := range in.RequestIDs {
		if err := a.Abort(r.Context(), vllmBaseRequestID(id)); err != nil {
			writeEngineError(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// vllmBaseRequestID undoes the prefixes vLLM's endpoints give request ids
// before scheduling them — "generate-tokens-{id}" (/inference/v1/generate),
// "cmpl-{id}-{i}" (/v1/completions), "chatcmpl-{id}" (chat) — since
// /abort_requests takes those engine ids and this server's engine knows
// requests by the id the client sent.
func vllmBaseRequestID(id string) string {
	if rest, ok := strings.CutPrefix(id, "generate-tokens-"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(id, "chatcmpl-"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(id, "cmpl-"); ok {
		if i := strings.LastIndexByte(rest, '-'); i > 0 {
			if _, err := strconv.Atoi(rest[i+1:]); err == nil {
				return rest[:i]
			}
		}
		return rest
	}
	return id
}

func (s *Server) handleVLLMPause(w http.ResponseWriter, r *http.Request) {
	// vLLM's default mode is abort (api_router.py's pause_generation).
	switch mode := r.URL.Query().Get("mode"); mode {
	case "":
		s.pause(w, r, server.PauseAbort, vllmPaused)
	case "abort", "wait", "keep":
		s.pause(w, r, server.PauseMode(mode), vllmPaused)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter mode: unknown mode %q (known: abort, wait, keep)", mode))
	}
}

func (s *Server) handleSleep(w http.ResponseWriter, r *http.Request) {
	level := server.SleepKVCache
	if q := r.URL.Query().Get("level"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || (n != 1 && n != 2) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter level: must be 1 or 2, got %q", q))
			return
		}
		level = server.SleepLevel(n)
	}
	s.sleep(w, r, level, "sleep and wake-up")
}

func (s *Server) handleWakeUp(w http.ResponseWriter, r *http.Request) {
	for _, t := range r.URL.Query()["tags"] {
		if t != "weights" && t != "kv_cache" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter tags: unknown tag %q (known: weights, kv_cache)", t))
			return
		}
	}
	s.wakeUp(w, r)
}

func (s *Server) handleIsSleeping(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"is_sleeping": s.isSleeping()})
}

// modelCard is OpenAI's Model object (id, object, created, owned_by), with
// vLLM's root and max_model_len (vllm-project/vllm
// vllm/entrypoints/openai/protocol.py ModelCard).
type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	MaxModelLen *int   `json:"max_model_len,omitempty"`
}

func (s *Server) modelCard() modelCard {
	c := modelCard{ID: s.cfg.Model, Object: "model", Created: s.created.Unix(), OwnedBy: "agentrl", Root: s.cfg.Model}
	if s.cfg.MaxModelLen > 0 {
		n := s.cfg.MaxModelLen
		c.MaxModelLen = &n
	}
	return c
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelCard{s.modelCard()}})
}

// handleModel is GET /v1/models/{id} (OpenAI models.retrieve).
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if err := s.checkModel(r.PathValue("id")); err != nil || r.PathValue("id") == "" {
		writeErrorCode(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", r.PathValue("id")), "model_not_found")
		return
	}
	writeJSON(w, http.StatusOK, s.modelCard())
}

// checkModel rejects a request naming another model than the served one,
// with 404 as vLLM's _check_model does ("The model `x` does not exist.",
// vllm/entrypoints/openai/serving_engine.py); an empty name means the
// served model.
func (s *Server) checkModel(name string) error {
	if name == "" || name == s.cfg.Model {
		return nil
	}
	return &errRequest{status: http.StatusNotFound, msg: fmt.Sprintf("The model `%s` does not exist.", name), code: "model_not_found"}
}

func (s *Server) setSleeping(v bool) {
	s.mu.Lock()
	s.sleeping = v
	s.mu.Unlock()
}

func (s *Server) isSleeping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sleeping
}
