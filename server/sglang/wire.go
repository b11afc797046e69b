package sglang

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/wire"
)

// The request and logprob encodings below are written by hand because
// they carry the prompts (thousands of ids per call) and reflection-based
// encoding/json was the largest cost of a loopback round trip.

// appendGenerateRequest writes the /generate body for req; see
// encodeGenerate for the mapping. stream asks for an event stream.
func appendGenerateRequest(b []byte, req server.GenerateRequest, stream bool) ([]byte, error) {
	p := req.Params
	topP, topK, rep := p.TopP, p.TopK, p.RepetitionPenalty
	if topP == 0 {
		topP = 1
	}
	if topK <= 0 {
		topK = -1
	}
	if rep == 0 {
		rep = 1
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"temperature", p.Temperature}, {"top_p", topP}, {"min_p", p.MinP}, {"repetition_penalty", rep},
		{"presence_penalty", p.PresencePenalty}, {"frequency_penalty", p.FrequencyPenalty}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return nil, fmt.Errorf("sampling parameter %s is %v: %w", f.name, f.v, server.ErrBadRequest)
		}
	}
	rid, err := json.Marshal(req.RequestID)
	if err != nil {
		return nil, err
	}
	b = append(b, `{"rid":`...)
	b = append(b, rid...)
	b = append(b, `,"input_ids":`...)
	b = wire.AppendIDs(b, req.PromptIDs)
	if v := req.Vision; v != nil {
		// GenerateReqInput.image_data (python/sglang/srt/managers/io_struct.py,
		// sgl-project/sglang 001067fffe33427bee0ed2f007fb7551a1d76b44): one
		// entry per image, in block order; load_image reads a data URL.
		// input_ids keep the blocks expanded: SGLang's Qwen-VL processor
		// (multimodal/processors/qwen_vl.py) matches each
		// <|vision_start|>(<|image_pad|>)+<|vision_end|> block to its image.
		b = append(b, `,"image_data":[`...)
		for i, im := range v.Images {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = wire.AppendDataURL(b, im.Data)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	b = append(b, `,"sampling_params":{"temperature":`...)
	b = strconv.AppendFloat(b, p.Temperature, 'g', -1, 64)
	b = append(b, `,"top_p":`...)
	b = strconv.AppendFloat(b, topP, 'g', -1, 64)
	b = append(b, `,"top_k":`...)
	b = strconv.AppendInt(b, int64(topK), 10)
	b = append(b, `,"min_p":`...)
	b = strconv.AppendFloat(b, p.MinP, 'g', -1, 64)
	b = append(b, `,"repetition_penalty":`...)
	b = strconv.AppendFloat(b, rep, 'g', -1, 64)
	// SGLang's penalizers (sampling/penaltylib) count the output tokens,
	// as vLLM does; sent only when set, so other bodies stay as they were.
	if p.PresencePenalty != 0 {
		b = append(b, `,"presence_penalty":`...)
		b = strconv.AppendFloat(b, p.PresencePenalty, 'g', -1, 64)
	}
	if p.FrequencyPenalty != 0 {
		b = append(b, `,"frequency_penalty":`...)
		b = strconv.AppendFloat(b, p.FrequencyPenalty, 'g', -1, 64)
	}
	if p.MaxNewTokens > 0 {
		b = append(b, `,"max_new_tokens":`...)
		b = strconv.AppendInt(b, int64(p.MaxNewTokens), 10)
	}
	if len(p.StopTokenIDs) > 0 {
		b = append(b, `,"stop_token_ids":`...)
		b = wire.AppendIDs(b, p.StopTokenIDs)
	}
	b = append(b, `,"skip_special_tokens":false,"no_stop_trim":true`...)
	if p.Seed != nil {
		b = append(b, `,"sampling_seed":`...)
		b = strconv.AppendUint(b, *p.Seed, 10)
	}
	b = append(b, `},"return_logprob":`...)
	b = strconv.AppendBool(b, p.Logprobs || p.PromptLogprobs || p.TopLogprobs > 0)
	if p.TopLogprobs > 0 {
		b = append(b, `,"top_logprobs_num":`...)
		b = strconv.AppendInt(b, int64(p.TopLogprobs), 10)
	}
	if p.PromptLogprobs {
		// SGLang writes null for the start position's own logprob
		// (scheduler_output_processor_mixin.py pads the first with None):
		// start one before the first wanted position.
		b = append(b, `,"logprob_start_len":`...)
		b = strconv.AppendInt(b, int64(max(p.PromptLogprobsFrom-1, 0)), 10)
	} else {
		b = append(b, `,"logprob_start_len":-1`...)
	}
	if p.RoutedExperts {
		b = append(b, `,"return_routed_experts":true`...)
		if p.RoutedExpertsFrom > 0 {
			// GenerateReqInput.routed_experts_start_len: the answer covers
			// [start, seqlen-1), start within [0, prompt tokens].
			if p.RoutedExpertsFrom > len(req.PromptIDs) {
				return nil, fmt.Errorf("routed experts from position %d, after the %d-token prompt: %w", p.RoutedExpertsFrom, len(req.PromptIDs), server.ErrBadRequest)
			}
			b = append(b, `,"routed_experts_start_len":`...)
			b = strconv.AppendInt(b, int64(p.RoutedExpertsFrom), 10)
		}
	}
	if req.Priority != 0 {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(req.Priority), 10)
	}
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, stream)
	b = append(b, '}')
	return b, nil
}

// parseTopLogprobs reads meta_info.output_top_logprobs, one list of
// [logprob, token_id, text] triples per output token (null for a
// position without alternatives), cut to k per token.
func parseTopLogprobs(data []byte, k int) ([][]server.TopLogprob, error) {
	var rows []json.RawMessage
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, errors.New(": expected a list of lists of [logprob, token_id, text] entries")
	}
	out := make([][]server.TopLogprob, len(rows))
	for i, row := range rows {
		out[i] = []server.TopLogprob{}
		if !isSet(row) {
			continue
		}
		lps, ids, err := parseLogprobTriples(row)
		if err != nil {
			return nil, fmt.Errorf("[%d]%v", i, err)
		}
		for j := range min(k, len(ids)) {
			out[i] = append(out[i], server.TopLogprob{TokenID: ids[j], Logprob: lps[j]})
		}
	}
	return out, nil
}

// parseLogprobTriples reads [[logprob, token_id, text|null], ...] from
// valid JSON (the enclosing decode checked it). A null logprob is -Inf
// (orjson's encoding of -inf); finite values below -MaxFloat32 clamp to it.
func parseLogprobTriples(data []byte) (lps []float32, ids []int32, err error) {
	i := wire.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, nil, errors.New("expected a list of [logprob, token_id, text] entries")
	}
	i = wire.SkipSpace(data, i+1)
	lps, ids = []float32{}, []int32{}
	if i < len(data) && data[i] == ']' {
		return lps, ids, nil
	}
	for n := 0; ; n++ {
		i = wire.SkipSpace(data, i)
		if i >= len(data) || data[i] != '[' {
			return nil, nil, fmt.Errorf("[%d]: expected [logprob, token_id, text]", n)
		}
		i = wire.SkipSpace(data, i+1)
		// logprob
		j := scanNumber(data, i)
		var lp float64
		switch {
		case j == i && hasPrefix(data[i:], "null"):
			// SGLang answers through orjson, which writes -inf (a token
			// the sampler could not have picked, e.g. one masked by a
			// grammar or top-k) as null: the logprob really is -Inf, and
			// failing the whole response over it would lose the turn.
			lp = math.Inf(-1)
			j = i + len("null")
		case j == i:
			return nil, nil, fmt.Errorf("[%d]: logprob is not a number", n)
		default:
			var perr error
			lp, perr = strconv.ParseFloat(string(data[i:j]), 64)
			if perr != nil && !errors.Is(perr, strconv.ErrRange) {
				return nil, nil, fmt.Errorf("[%d]: logprob %s: %v", n, data[i:j], perr)
			}
			if lp > 0 || math.IsNaN(lp) {
				return nil, nil, fmt.Errorf("[%d]: logprob %v is not ≤ 0", n, lp)
			}
			if lp < -math.MaxFloat32 {
				lp = -math.MaxFloat32
			}
		}
		i = wire.SkipSpace(data, j)
		if i >= len(data) || data[i] != ',' {
			return nil, nil, fmt.Errorf("[%d]: expected [logprob, token_id, text]", n)
		}
		i = wire.SkipSpace(data, i+1)
		j = scanNumber(data, i)
		id, perr := strconv.ParseInt(string(data[i:j]), 10, 32)
		if j == i || perr != nil || id < 0 {
			return nil, nil, fmt.Errorf("[%d]: token id %.20s is not a non-negative 32-bit integer", n, data[i:])
		}
		i = wire.SkipSpace(data, j)
		// Optional third element (the token text), skipped.
		if i < len(data) && data[i] == ',' {
			i = skipValue(data, wire.SkipSpace(data, i+1))
			i = wire.SkipSpace(data, i)
		}
		if i >= len(data) || data[i] != ']' {
			return nil, nil, fmt.Errorf("[%d]: expected [logprob, token_id, text]", n)
		}
		lps = append(lps, float32(lp))
		ids = append(ids, int32(id))
		i = wire.SkipSpace(data, i+1)
		if i >= len(data) {
			return nil, nil, errors.New("unterminated list")
		}
		switch data[i] {
		case ',':
			i++
		case ']':
			return lps, ids, nil
		default:
			return nil, nil, fmt.Errorf("[%d]: unexpected %q", n, data[i])
		}
	}
}

func hasPrefix(b []byte, s string) bool { return len(b) >= len(s) && string(b[:len(s)]) == s }

// scanNumber returns the end of the JSON number at i (i if none).
func scanNumber(data []byte, i int) int {
	j := i
	for j < len(data) {
		c := data[j]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			j++
			continue
		}
		break
	}
	return j
}

// skipValue returns the end of the JSON value at i, which is valid JSON.
func skipValue(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch c := data[i]; c {
		case '"':
			i++
			for i < len(data) && data[i] != '"' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case '[', '{':
			depth++
			i++
		case ']', '}':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(data) && (data[i] == ',' || data[i] == ']' || data[i] == '}') {
			return i
		}
	}
	return i
}
