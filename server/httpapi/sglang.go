package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentrl/agentrl/server"
)

// ---- SGLang /generate ------------------------------------------------------

type sglGenerateRequest struct {
	RID            json.RawMessage `json:"rid"`
	Text           json.RawMessage `json:"text"`
	InputIDs       json.RawMessage `json:"input_ids"`
	InputEmbeds    json.RawMessage `json:"input_embeds"`
	SamplingParams *sglSampling    `json:"sampling_params"`
	ReturnLogprob  bool            `json:"return_logprob"`
	TopLogprobsNum int             `json:"top_logprobs_num"`
	// LogprobStartLen is where input_token_logprobs start in the prompt;
	// -1 (the default) is its last token (sgl-project/sglang
	// python/sglang/srt/managers/scheduler.py handle_generate_request).
	LogprobStartLen *int `json:"logprob_start_len"`
	// ReturnTextInLogprobs fills the third slot of each logprob entry with
	// the token's text (sgl-project/sglang io_struct.py GenerateReqInput).
	ReturnTextInLogprobs bool `json:"return_text_in_logprobs"`
	Stream               bool `json:"stream"`
	Priority             *int `json:"priority"`
}

// samplingKnobs are the sampling fields SGLang and vLLM share, under the
// same names.
type samplingKnobs struct {
	Temperature       *float64        `json:"temperature"`
	TopP              *float64        `json:"top_p"`
	TopK              *int            `json:"top_k"`
	MinP              *float64        `json:"min_p"`
	RepetitionPenalty *float64        `json:"repetition_penalty"`
	FrequencyPenalty  float64         `json:"frequency_penalty"`
	PresencePenalty   float64         `json:"presence_penalty"`
	StopTokenIDs      []int32         `json:"stop_token_ids"`
	Stop              json.RawMessage `json:"stop"`
	SkipSpecialTokens *bool           `json:"skip_special_tokens"`
	IgnoreEOS         bool            `json:"ignore_eos"`
	N                 *int            `json:"n"`
}

type sglSampling struct {
	samplingKnobs
	MaxNewTokens *int    `json:"max_new_tokens"`
	NoStopTrim   bool    `json:"no_stop_trim"`
	SamplingSeed *uint64 `json:"sampling_seed"`
	Regex        *string `json:"regex"`
	JSONSchema   *string `json:"json_schema"`
	EBNF         *string `json:"ebnf"`
}

// sglangDefaultMaxNewTokens is SGLang's default when max_new_tokens is absent.
const sglangDefaultMaxNewTokens = 128

// prepared is a decoded native request.
type prepared struct {
	req          server.GenerateRequest
	stream       bool
	skipSpecial  bool
	trimStop     bool
	logprobs     bool
	tokensAsIDs  bool // vLLM return_tokens_as_token_ids
	returnIDs    bool // vLLM return_token_ids
	includeUsage bool
	textInLPs    bool     // SGLang return_text_in_logprobs
	inputLPStart int      // SGLang logprob_start_len, resolved (return_logprob only)
	stops        []string // OpenAI stop strings (completions, chat)
	n            int      // OpenAI n: samples of the prompt (completions)
	includeStop  bool     // vLLM include_stop_str_in_output
}

func (s *Server) parseSGLangGenerate(data []byte) (prepared, error) {
	return s.readSGLangGenerate(bytes.NewReader(data))
}

func (s *Server) readSGLangGenerate(r io.Reader) (prepared, error) {
	b, err := s.splitBody(r, "input_ids")
	if err != nil {
		return prepared{}, err
	}
	return s.prepareSGLangGenerate(b)
}

func (s *Server) prepareSGLangGenerate(b *splitBody) (prepared, error) {
	var err error
	var in sglGenerateRequest
	if err := unmarshalBody(b.rest, &in); err != nil {
		return prepared{}, err
	}
	p := prepared{stream: in.Stream, logprobs: in.ReturnLogprob, skipSpecial: true, trimStop: true}
	if len(in.RID) > 0 && string(in.RID) != "null" {
		if err := json.Unmarshal(in.RID, &p.req.RequestID); err != nil {
			return p, badRequest(`field "rid": expected a string (a list of ids goes with a batch of prompts)`)
		}
	}
	p.identify(p.req.RequestID, in.Priority)
	if isSet(in.InputEmbeds) {
		return p, badRequest(`field "input_embeds" is not supported: send "input_ids"`)
	}
	switch {
	case (b.hasIDs || isSet(in.InputIDs)) && isSet(in.Text):
		return p, badRequest(`give exactly one of "text" and "input_ids", not both`)
	case b.hasIDs:
		p.req.PromptIDs, err = s.checkIDs("input_ids", b.ids)
	case isSet(in.InputIDs):
		p.req.PromptIDs, err = s.parseIDs("input_ids", in.InputIDs)
	case isSet(in.Text):
		p.req.PromptIDs, err = s.encodeTextField("text", in.Text)
	default:
		return p, badRequest(`missing prompt: give "input_ids" (or "text")`)
	}
	if err != nil {
		return p, err
	}
	if in.TopLogprobsNum < 0 || in.TopLogprobsNum > server.MaxTopLogprobs {
		return p, badRequest(`field "top_logprobs_num": %d is outside [0, %d]`, in.TopLogprobsNum, server.MaxTopLogprobs)
	}
	sp := in.SamplingParams
	if sp == nil {
		sp = &sglSampling{}
	}
	params := server.SamplingParams{Temperature: 1, TopP: 1, MaxNewTokens: sglangDefaultMaxNewTokens, Logprobs: in.ReturnLogprob}
	if in.ReturnLogprob {
		// SGLang reads top_logprobs_num only with return_logprob.
		params.TopLogprobs = in.TopLogprobsNum
	}
	sp.apply(&params)
	if sp.MaxNewTokens != nil {
		params.MaxNewTokens = *sp.MaxNewTokens
	}
	params.Seed = sp.SamplingSeed
	if sp.SkipSpecialTokens != nil {
		p.skipSpecial = *sp.SkipSpecialTokens
	}
	p.trimStop = !sp.NoStopTrim
	p.textInLPs = in.ReturnTextInLogprobs
	if sp.IgnoreEOS {
		// SGLang's Req.check_finished skips the whole token check —
		// stop_token_ids and the model's EOS — under ignore_eos, leaving
		// max_new_tokens and stop strings.
		params.StopTokenIDs = nil
		sp.IgnoreEOS = false
	}
	if err := sp.unsupported("sampling_params."); err != nil {
		return p, err
	}
	for name, v := range map[string]*string{"regex": sp.Regex, "json_schema": sp.JSONSchema, "ebnf": sp.EBNF} {
		if v != nil && *v != "" {
			return p, badRequest("field %q: constrained decoding is not supported", "sampling_params."+name)
		}
	}
	if err := validParams(&params, "sampling_params.", "max_new_tokens"); err != nil {
		return p, err
	}
	if in.ReturnLogprob {
		if err := p.inputLogprobs(&params, in.LogprobStartLen); err != nil {
			return p, err
		}
	}
	p.req.Params = params
	return p, nil
}

// inputLogprobs resolves SGLang's logprob_start_len against the prompt and
// asks the engine for the prompt logprobs input_token_logprobs needs.
// SGLang's scheduler reads -1 (or no value) as the prompt's last token and
// rejects a start at or past the prompt's end; its output processor
// (scheduler_output_processor_mixin.py, "Always pad the first one with
// None") writes null for the start position's own logprob, so the engine
// is asked from the position after it.
func (p *prepared) inputLogprobs(params *server.SamplingParams, startLen *int) error {
	n := len(p.req.PromptIDs)
	start := n - 1
	if startLen != nil && *startLen != -1 {
		start = *startLen
		if start < 0 || start >= n {
			return badRequest("field %q: %d is outside the prompt of %d tokens (give -1 or 0 to %d)", "logprob_start_len", start, n, n-1)
		}
	}
	p.inputLPStart = start
	if start+1 < n {
		params.PromptLogprobs, params.PromptLogprobsFrom = true, start+1
	}
	return nil
}

// apply sets the knobs the request gives, so that unset ones keep the
// defaults already in p.
func (k *samplingKnobs) apply(p *server.SamplingParams) {
	if k.Temperature != nil {
		p.Temperature = *k.Temperature
	}
	if k.TopP != nil {
		p.TopP = *k.TopP
	}
	if k.TopK != nil {
		p.TopK = *k.TopK
	}
	if k.MinP != nil {
		p.MinP = *k.MinP
	}
	if k.RepetitionPenalty != nil {
		p.RepetitionPenalty = *k.RepetitionPenalty
	}
	p.PresencePenalty, p.FrequencyPenalty = k.PresencePenalty, k.FrequencyPenalty
	p.StopTokenIDs = k.StopTokenIDs
}

// identify sets the request id, a fresh one when the client gave none (the
// id is what aborts name), and the scheduling priority when given.
func (p *prepared) identify(id string, priority *int) {
	p.req.RequestID = id
	if p.req.RequestID == "" {
		p.req.RequestID = newRequestID()
	}
	if priority != nil {
		p.req.Priority = *priority
	}
}

func isSet(raw json.RawMessage) bool {
	return len(raw) > 0 && string(bytes.TrimSpace(raw)) != "null"
}

// unsupported rejects settings this server cannot honour, rather than
// silently sampling something else than asked.
func (k *samplingKnobs) unsupported(prefix string) error {
	switch {
	case k.N != nil && *k.N != 1:
		return badRequest("field %q: only n=1 is supported (send one request per sample)", prefix+"n")
	case k.IgnoreEOS:
		return badRequest("field %q: ignore_eos is not supported", prefix+"ignore_eos")
	}
	if isSet(k.Stop) {
		var one string
		var many []string
		if json.Unmarshal(k.Stop, &one) == nil && one == "" {
			return nil
		}
		if json.Unmarshal(k.Stop, &many) == nil && len(many) == 0 {
			return nil
		}
		return badRequest("field %q: stop strings are not supported, use stop_token_ids", prefix+"stop")
	}
	return nil
}

func validParams(p *server.SamplingParams, prefix, maxName string) error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !finite(p.Temperature) || p.Temperature < 0:
		return badRequest("field %q: must be ≥ 0, got %v", prefix+"temperature", p.Temperature)
	case !finite(p.TopP) || p.TopP <= 0 || p.TopP > 1:
		return badRequest("field %q: must be in (0, 1], got %v", prefix+"top_p", p.TopP)
	case p.TopK < -1:
		return badRequest("field %q: must be -1 (disabled) or ≥ 0, got %d", prefix+"top_k", p.TopK)
	case !finite(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return badRequest("field %q: must be in [0, 1], got %v", prefix+"min_p", p.MinP)
	case !finite(p.RepetitionPenalty) || p.RepetitionPenalty < 0:
		return badRequest("field %q: must be ≥ 0, got %v", prefix+"repetition_penalty", p.RepetitionPenalty)
	case p.MaxNewTokens < 1:
		return badRequest("field %q: must be ≥ 1, got %d", prefix+maxName, p.MaxNewTokens)
	}
	if p.TopK < 0 {
		p.TopK = 0
	}
	if len(p.StopTokenIDs) > server.MaxStopTokenIDs {
		// Engines check the list after every sampled token (and refuse
		// one longer than their vocabulary, which they know and this
		// server may not).
		return badRequest("field %q: %d ids, more than the limit of %d", prefix+"stop_token_ids", len(p.StopTokenIDs), server.MaxStopTokenIDs)
	}
	for i, id := range p.StopTokenIDs {
		if id < 0 {
			return badRequest("field %q: element %d is negative (%d)", prefix+"stop_token_ids", i, id)
		}
	}
	// The rest of the ranges (the penalties, top logprobs) are the
	// engines' one check, run here so the error names the field as the
	// client sent it: Validate's messages start with the field's name.
	if err := p.Validate(); err != nil {
		name, why, _ := strings.Cut(strings.TrimPrefix(err.Error(), server.ErrBadRequest.Error()+": "), " ")
		return badRequest("field %q: %s", prefix+name, why)
	}
	return nil
}

// parseIDs reads a flat list of token ids, naming the offending element.
func (s *Server) parseIDs(field string, raw json.RawMessage) ([]int32, error) {
	ids, err := parseIntList(raw)
	if err != nil {
		return nil, badRequest("field %q: %v", field, err)
	}
	return s.checkIDs(field, ids)
}

// checkIDs checks a prompt's ids against the vocabulary.
func (s *Server) checkIDs(field string, ids []int32) ([]int32, error) {
	if len(ids) == 0 {
		return nil, badRequest("field %q: empty prompt", field)
	}
	vocab := 0
	if s.cfg.Chat != nil {
		vocab = s.cfg.Chat.Tokenizer.VocabSize()
	}
	for i, id := range ids {
		if id < 0 || (vocab > 0 && int(id) >= vocab) {
			if vocab > 0 {
				return nil, badRequest("field %q: element %d: token id %d is outside the vocabulary [0, %d)", field, i, id, vocab)
			}
			return nil, badRequest("field %q: element %d: token id %d is negative", field, i, id)
		}
	}
	return ids, nil
}

func (s *Server) encodeTextField(field string, raw json.RawMessage) ([]int32, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return nil, badRequest("field %q: expected a string (batched prompts are not supported)", field)
	}
	if s.cfg.Chat == nil {
		return nil, badRequest("field %q: this server has no tokenizer: send token ids", field)
	}
	ids, err := encode(s.cfg.Chat.Tokenizer, text)
	if err != nil {
		return nil, badRequest("field %q: %v", field, err)
	}
	if len(ids) == 0 {
		return nil, badRequest("field %q: empty prompt", field)
	}
	return ids, nil
}

// encode is tok.Encode, with the reason when the tokenizer fails (a
// hostile tokenizer file's limits) rather than no ids.
func encode(tok Tokenizer, text string) ([]int32, error) {
	if c, ok := tok.(interface {
		EncodeChecked(string) ([]int32, error)
	}); ok {
		return c.EncodeChecked(text)
	}
	return tok.Encode(text), nil
}

// decodeText is the response text: "" without a tokenizer.
func (s *Server) decodeText(ids []int32, skipSpecial bool) (string, error) {
	if s.cfg.Chat == nil || len(ids) == 0 {
		return "", nil
	}
	return s.cfg.Chat.Tokenizer.Decode(ids, skipSpecial)
}

type sglGenerateResponse struct {
	Text      string  `json:"text"`
	OutputIDs []int32 `json:"output_ids"`
	MetaInfo  sglMeta `json:"meta_info"`
}

type sglMeta struct {
	ID                  string          `json:"id"`
	FinishReason        sglFinish       `json:"finish_reason"`
	PromptTokens        int             `json:"prompt_tokens"`
	CompletionTokens    int             `json:"completion_tokens"`
	CachedTokens        int             `json:"cached_tokens"`
	WeightVersion       string          `json:"weight_version"`
	NumRetractions      int             `json:"num_retractions"`
	InputTokenLogprobs  *logprobTriples `json:"input_token_logprobs,omitempty"`
	OutputTokenLogprobs *logprobTriples `json:"output_token_logprobs,omitempty"`
	// OutputTopLogprobs is SGLang's output_top_logprobs: per output
	// token, its top_logprobs_num alternatives as triples.
	OutputTopLogprobs *topTriples `json:"output_top_logprobs,omitempty"`
	E2ELatency        float64     `json:"e2e_latency"`
}

// topTriples writes SGLang's [[[logprob, token_id, text|null], ...], ...].
type topTriples struct {
	rows  [][]server.TopLogprob
	texts [][]string // nil writes null texts
}

func (t *topTriples) MarshalJSON() ([]byte, error) { return t.appendJSON(nil), nil }

// newTopTriples is rows as triples, with each alternative's text when
// withText.
func (s *Server) newTopTriples(rows [][]server.TopLogprob, withText bool) (*topTriples, error) {
	t := &topTriples{rows: rows}
	if !withText || s.cfg.Chat == nil {
		return t, nil
	}
	t.texts = make([][]string, len(rows))
	for i, row := range rows {
		var err error
		if t.texts[i], err = s.tokenTexts(make([]string, 0, len(row)), topIDs(row)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func topIDs(row []server.TopLogprob) []int32 {
	ids := make([]int32, len(row))
	for i, e := range row {
		ids[i] = e.TokenID
	}
	return ids
}

type sglFinish struct {
	Type    string `json:"type"`
	Matched *int32 `json:"matched,omitempty"`
	Length  *int   `json:"length,omitempty"`
	Message string `json:"message,omitempty"`
}

// logprobTriples writes SGLang's [[logprob, token_id, null], ...] without
// boxing every number.
type logprobTriples struct {
	lps   []float32
	ids   []int32
	texts []string // nil writes null texts
}

func (l *logprobTriples) MarshalJSON() ([]byte, error) { return l.appendJSON(nil), nil }

func appendFloat(b []byte, f float32) []byte {
	if math.IsInf(float64(f), -1) || math.IsNaN(float64(f)) {
		// JSON has no -Infinity; engines report the smallest float instead.
		return strconv.AppendFloat(b, -math.MaxFloat32, 'g', -1, 32)
	}
	return strconv.AppendFloat(b, float64(f), 'g', -1, 32)
}

// stopMatched reports whether the output ends with a stop token: one the
// request named, or an end-of-turn token of the tokenizer. Only then is
// there a stop token to trim from the text.
func (s *Server) stopMatched(out server.TokenOutput, req server.GenerateRequest) bool {
	n := len(out.TokenIDs)
	if out.StopReason != server.StopEOS || n == 0 {
		return false
	}
	last := out.TokenIDs[n-1]
	if contains(req.Params.StopTokenIDs, last) {
		return true
	}
	return s.cfg.Chat != nil && contains(s.cfg.Chat.Tokenizer.EOSTokenIDs(), last)
}

func sglFinishOf(out server.TokenOutput) sglFinish {
	switch out.StopReason {
	case server.StopLength:
		n := len(out.TokenIDs)
		return sglFinish{Type: "length", Length: &n}
	case server.StopAbort:
		return sglFinish{Type: "abort", Message: "request aborted"}
	}
	f := sglFinish{Type: "stop"}
	if n := len(out.TokenIDs); n > 0 {
		last := out.TokenIDs[n-1]
		f.Matched = &last
	}
	return f
}

func (s *Server) handleSGLangGenerate(w http.ResponseWriter, r *http.Request) {
	// Like SGLang's, the latency counts from the request's arrival.
	start := time.Now()
	b, err := s.splitBody(r.Body, "input_ids")
	if err != nil {
		writeRequestError(w, err)
		return
	}
	p, err := s.prepareSGLangGenerate(b)
	if err != nil {
		// A batch (a list of prompts, or n > 1) is not a single request;
		// anything else keeps the single request's error. A list of id
		// lists stays whole in b.rest; a flat one was split out.
		var ids []int32
		if b.hasIDs {
			ids = b.ids
		}
		items, batch, berr := sglangBatch(b.rest, ids)
		switch {
		case batch && berr != nil:
			writeRequestError(w, berr)
		case batch:
			s.serveSGLangBatch(w, r, items, start)
		default:
			writeRequestError(w, err)
		}
		return
	}
	if st, ok := s.engine.(server.Streamer); ok && p.stream {
		s.streamSGLangGenerate(w, r, st, p, start)
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
	body, err := s.sglangBody(p, out, start)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	if p.stream {
		// The engine hands out whole outputs only: the stream is one
		// cumulative event, which is a valid SGLang stream.
		writeSSE(w, []any{json.RawMessage(body)})
		return
	}
	writeRawJSON(w, http.StatusOK, body)
}

// sglangBody is the /generate response for a finished output.
func (s *Server) sglangBody(p prepared, out server.TokenOutput, start time.Time) ([]byte, error) {
	textIDs := out.TokenIDs
	if p.trimStop && s.stopMatched(out, p.req) {
		textIDs = textIDs[:len(textIDs)-1]
	}
	text, err := s.decodeText(textIDs, p.skipSpecial)
	if err != nil {
		return nil, fmt.Errorf("decoding the output: %w", err)
	}
	resp := sglGenerateResponse{
		Text:      text,
		OutputIDs: nonNil(out.TokenIDs),
		MetaInfo: sglMeta{
			ID:               p.req.RequestID,
			FinishReason:     sglFinishOf(out),
			PromptTokens:     len(p.req.PromptIDs),
			CompletionTokens: len(out.TokenIDs),
			CachedTokens:     out.CachedTokens,
			WeightVersion:    s.versions.name(out.WeightVersion),
			NumRetractions:   out.Retractions,
			E2ELatency:       time.Since(start).Seconds(),
		},
	}
	if p.logprobs {
		resp.MetaInfo.OutputTokenLogprobs = &logprobTriples{lps: out.Logprobs, ids: out.TokenIDs}
		if p.textInLPs && s.cfg.Chat != nil {
			texts, err := s.tokenTexts(nil, out.TokenIDs)
			if err != nil {
				return nil, err
			}
			resp.MetaInfo.OutputTokenLogprobs.texts = texts
		}
		in := p.inputTriples(out)
		if p.textInLPs && s.cfg.Chat != nil {
			texts, err := s.tokenTexts(nil, in.ids)
			if err != nil {
				return nil, err
			}
			in.texts = texts
		}
		resp.MetaInfo.InputTokenLogprobs = in
		if p.req.Params.TopLogprobs > 0 {
			if resp.MetaInfo.OutputTopLogprobs, err = s.newTopTriples(out.TopLogprobs, p.textInLPs); err != nil {
				return nil, err
			}
		}
	}
	return resp.appendJSON(make([]byte, 0, 256+len(resp.OutputIDs)*40)), nil
}

// inputTriples is input_token_logprobs: the prompt from logprob_start_len
// on, the first entry's logprob null as SGLang writes it.
func (p prepared) inputTriples(out server.TokenOutput) *logprobTriples {
	ids := p.req.PromptIDs[p.inputLPStart:]
	lps := make([]float32, 1, len(ids))
	lps[0] = float32(math.NaN())
	if p.req.Params.PromptLogprobs {
		lps = append(lps, out.PromptLogprobs...)
	}
	return &logprobTriples{lps: lps, ids: ids}
}

// tokenTexts appends each token's own text to texts.
func (s *Server) tokenTexts(texts []string, ids []int32) ([]string, error) {
	for _, id := range ids {
		t, err := s.cfg.Chat.Tokenizer.Decode([]int32{id}, false)
		if err != nil {
			return texts, fmt.Errorf("decoding token %d: %w", id, err)
		}
		texts = append(texts, t)
	}
	return texts, nil
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// checkOutput rejects engine outputs that would break the wire contract.
func checkOutput(out server.TokenOutput, req server.GenerateRequest) error {
	if req.Params.Logprobs && len(out.Logprobs) != len(out.TokenIDs) {
		return &server.Error{Server: "engine", Op: "generate",
			Err: fmt.Errorf("engine returned %d logprobs for %d tokens: %w", len(out.Logprobs), len(out.TokenIDs), server.ErrBadResponse)}
	}
	if req.Params.TopLogprobs > 0 && len(out.TopLogprobs) != len(out.TokenIDs) {
		if out.TopLogprobs == nil && len(out.TokenIDs) > 0 {
			return &server.Error{Server: "engine", Op: "generate", Status: http.StatusNotImplemented,
				Err: errors.New("this engine does not compute top logprobs")}
		}
		return &server.Error{Server: "engine", Op: "generate",
			Err: fmt.Errorf("engine returned %d top logprob lists for %d tokens: %w", len(out.TopLogprobs), len(out.TokenIDs), server.ErrBadResponse)}
	}
	if p := req.Params; p.PromptLogprobs && len(out.PromptLogprobs) != len(req.PromptIDs)-p.PromptLogprobsFrom {
		if out.PromptLogprobs == nil {
			return &server.Error{Server: "engine", Op: "generate", Status: http.StatusNotImplemented,
				Err: errors.New("this engine does not compute prompt logprobs")}
		}
		return &server.Error{Server: "engine", Op: "generate",
			Err: fmt.Errorf("engine returned %d prompt logprobs for %d positions: %w", len(out.PromptLogprobs), len(req.PromptIDs)-p.PromptLogprobsFrom, server.ErrBadResponse)}
	}
	return nil
}

func readBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength < 1<<30 {
		buf.Grow(int(r.ContentLength))
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, bodyError(err)
	}
	return buf.Bytes(), nil
}

// bodyError is the request error for a failed body read: 413 over the
// size limit, 408 past the body timeout, else 400.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return &errRequest{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("request body is larger than the limit of %d bytes", mbe.Limit)}
	case errors.Is(err, errBodyMemory):
		return &errRequest{status: http.StatusTooManyRequests, code: "rate_limit_exceeded", msg: errBodyMemory.Error()}
	case isTimeout(err):
		return &errRequest{status: http.StatusRequestTimeout, msg: "reading the request body took too long: " + err.Error()}
	}
	return badRequest("reading the request body: %v", err)
}

// writeSSE writes events as server-sent events ending with [DONE].
func writeSSE(w http.ResponseWriter, events []any) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			b, _ = json.Marshal(errorBody{Error: errorDetail{Message: "encoding the event: " + err.Error(), Type: "server_error"}})
		}
		_, _ = w.Write([]byte("data: "))
		_, _ = w.Write(b)
		_, _ = w.Write([]byte("\n\n"))
		if fl != nil {
			fl.Flush()
		}
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	if fl != nil {
		fl.Flush()
	}
}

// ---- SGLang control endpoints --------------------------------------------

func (s *Server) handleAbortRequest(w http.ResponseWriter, r *http.Request) {
	var in struct {
		RID      string `json:"rid"`
		AbortAll bool   `json:"abort_all"`
	}
	if err := decodeOptional(r, &in); err != nil {
		writeRequestError(w, err)
		return
	}
	a, ok := capability[server.Aborter](s, w, "abort")
	if !ok {
		return
	}
	var err error
	switch {
	case in.AbortAll:
		err = a.AbortAll(r.Context())
	case in.RID != "":
		err = a.Abort(r.Context(), in.RID)
	default:
		writeError(w, http.StatusBadRequest, `give "rid" or "abort_all": true`)
		return
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if h, ok := s.engine.(server.HealthChecker); ok {
		if err := h.Health(r.Context()); err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleFlushCache(w http.ResponseWriter, r *http.Request) {
	f, ok := capability[server.CacheFlusher](s, w, "cache flushes")
	if !ok {
		return
	}
	if err := f.FlushCache(r.Context()); err != nil {
		writeEngineError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("Cache flushed.\n"))
}

type updateWeightsResponse struct {
	Success           bool   `json:"success"`
	Message           string `json:"message"`
	NumPausedRequests int    `json:"num_paused_requests"`
}

func (s *Server) handleUpdateWeightsFromDisk(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ModelPath        string          `json:"model_path"`
		WeightVersion    json.RawMessage `json:"weight_version"`
		AbortAllRequests bool            `json:"abort_all_requests"`
		FlushCache       *bool           `json:"flush_cache"`
	}
	if err := decodeJSON(r, &in); err != nil {
		writeRequestError(w, err)
		return
	}
	if in.ModelPath == "" {
		writeError(w, http.StatusBadRequest, `field "model_path": required`)
		return
	}
	vname, err := parseVersionString(in.WeightVersion)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	var version int64
	if vname != "" {
		version = s.versions.resolve(vname)
	}
	u, ok := capability[server.WeightUpdater](s, w, "weight updates")
	if !ok {
		return
	}
	path, perr := s.weightsPath(in.ModelPath)
	if perr != nil {
		writeJSON(w, perr.status, updateWeightsResponse{Message: perr.msg})
		return
	}
	if in.AbortAllRequests {
		if a, ok := s.engine.(server.Aborter); ok {
			if err := a.AbortAll(r.Context()); err != nil {
				writeEngineError(w, err)
				return
			}
		}
	}
	if err := u.UpdateWeights(r.Context(), server.Weights{Version: version, Path: path}); err != nil {
		// SGLang answers a failed update 400 with success false.
		status := http.StatusBadRequest
		if errors.Is(err, server.ErrUnavailable) || errors.Is(err, server.ErrOverloaded) {
			status = statusOf(err) // the client may try again later
		}
		writeJSON(w, status, updateWeightsResponse{Message: err.Error()})
		return
	}
	if vname != "" {
		s.versions.setCurrent(vname)
	}
	if in.FlushCache == nil || *in.FlushCache {
		if f, ok := s.engine.(server.CacheFlusher); ok {
			if err := f.FlushCache(r.Context()); err != nil {
				writeJSON(w, statusOf(err), updateWeightsResponse{Message: "weights updated, flushing the cache failed: " + err.Error()})
				return
			}
		}
	}
	writeJSON(w, http.StatusOK, updateWeightsResponse{Success: true, Message: "Succeeded to update model weights."})
}

// sleepLevelOfTags maps SGLang memory tags to a sleep level: releasing the
// weights (or everything, no tags) is level 2, only the KV cache level 1.
func sleepLevelOfTags(tags []string) (server.SleepLevel, error) {
	if len(tags) == 0 {
		return server.SleepWeights, nil
	}
	level := server.SleepKVCache
	for _, t := range tags {
		switch t {
		case "kv_cache", "cuda_graph":
		case "weights":
			level = server.SleepWeights
		default:
			return 0, badRequest(`field "tags": unknown tag %q (known: weights, kv_cache, cuda_graph)`, t)
		}
	}
	return level, nil
}

func (s *Server) handleReleaseMemory(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Tags []string `json:"tags"`
	}
	if err := decodeOptional(r, &in); err != nil {
		writeRequestError(w, err)
		return
	}
	level, err := sleepLevelOfTags(in.Tags)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	s.sleep(w, r, level, "releasing memory")
}

func (s *Server) handleResumeMemory(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Tags []string `json:"tags"`
	}
	if err := decodeOptional(r, &in); err != nil {
		writeRequestError(w, err)
		return
	}
	if _, err := sleepLevelOfTags(in.Tags); err != nil {
		writeRequestError(w, err)
		return
	}
	s.wakeUp(w, r)
}

// sleep puts the engine to sleep at level; what names the feature in the
// error when the engine cannot sleep.
func (s *Server) sleep(w http.ResponseWriter, r *http.Request, level server.SleepLevel, what string) {
	sl, ok := capability[server.Sleeper](s, w, what)
	if !ok {
		return
	}
	if err := sl.Sleep(r.Context(), level); err != nil {
		writeEngineError(w, err)
		return
	}
	s.setSleeping(true)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) wakeUp(w http.ResponseWriter, r *http.Request) {
	sl, ok := capability[server.Sleeper](s, w, "sleep and wake-up")
	if !ok {
		return
	}
	if err := sl.WakeUp(r.Context()); err != nil {
		writeEngineError(w, err)
		return
	}
	s.setSleeping(false)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handlePauseGeneration(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Mode string `json:"mode"`
	}
	if err := decodeOptional(r, &in); err != nil {
		writeRequestError(w, err)
		return
	}
	switch in.Mode {
	case "", "abort":
		s.pause(w, r, server.PauseAbort, sglPaused)
	case "retract":
		s.pause(w, r, server.PauseRetract, sglPaused)
	case "in_place":
		s.pause(w, r, server.PauseKeep, sglPaused)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`field "mode": unknown mode %q (known: abort, retract, in_place)`, in.Mode))
	}
}

// The pause and resume bodies are the upstream ones: SGLang's
// /pause_generation and /continue_generation (http_server.py @ 0025436e)
// and vLLM's /pause and /resume.
var (
	sglPaused    = map[string]string{"message": "Generation paused successfully.", "status": "ok"}
	sglContinued = map[string]string{"message": "Generation continued successfully.", "status": "ok"}
	vllmPaused   = map[string]string{"status": "paused"}
	vllmResumed  = map[string]string{"status": "resumed"}
)

func (s *Server) pause(w http.ResponseWriter, r *http.Request, mode server.PauseMode, body any) {
	p, ok := capability[server.Pauser](s, w, "pausing")
	if !ok {
		return
	}
	if err := p.Pause(r.Context(), mode); err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request, body any) {
	p, ok := capability[server.Pauser](s, w, "pausing")
	if !ok {
		return
	}
	if err := p.Resume(r.Context()); err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleContinueGeneration(w http.ResponseWriter, r *http.Request) {
	s.resume(w, r, sglContinued)
}

func (s *Server) handleVLLMResume(w http.ResponseWriter, r *http.Request) {
	s.resume(w, r, vllmResumed)
}

func (s *Server) handleModelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path":                s.modelPath(),
		"tokenizer_path":            s.modelPath(),
		"is_generation":             true,
		"preferred_sampling_params": nil,
		"weight_version":            s.versions.currentName(),
	})
}
