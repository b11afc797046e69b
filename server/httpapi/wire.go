package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/agentrl/agentrl/server/internal/wire"
)

// The generate responses are written by hand: they carry a value per
// output token, and encoding/json re-validates the output of every
// MarshalJSON, which was the largest cost of answering. The struct types
// keep their JSON tags; a test checks both encodings agree.

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

func (f sglFinish) appendJSON(b []byte) []byte {
	if f.Type == "" {
		// A streamed event before the end: SGLang writes null.
		return append(b, "null"...)
	}
	b = append(b, `{"type":`...)
	b = appendString(b, f.Type)
	if f.Matched != nil {
		b = append(b, `,"matched":`...)
		b = strconv.AppendInt(b, int64(*f.Matched), 10)
	}
	if f.Length != nil {
		b = append(b, `,"length":`...)
		b = strconv.AppendInt(b, int64(*f.Length), 10)
	}
	if f.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, f.Message)
	}
	return append(b, '}')
}

func (l *logprobTriples) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, id := range l.ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		if math.IsNaN(float64(l.lps[i])) {
			b = append(b, "null"...) // a position without a logprob (the first input token)
		} else {
			b = appendFloat(b, l.lps[i])
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(id), 10)
		if l.texts != nil {
			b = append(b, ',')
			b = appendString(b, l.texts[i])
			b = append(b, ']')
			continue
		}
		b = append(b, ",null]"...)
	}
	return append(b, ']')
}

func (t *topTriples) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, row := range t.rows {
		if i > 0 {
			b = append(b, ',')
		}
		l := logprobTriples{lps: make([]float32, len(row)), ids: make([]int32, len(row))}
		for j, e := range row {
			l.lps[j], l.ids[j] = e.Logprob, e.TokenID
		}
		if t.texts != nil {
			l.texts = t.texts[i]
		}
		b = l.appendJSON(b)
	}
	return append(b, ']')
}

func (r *sglGenerateResponse) appendJSON(b []byte) []byte {
	m := &r.MetaInfo
	b = append(b, `{"text":`...)
	b = appendString(b, r.Text)
	b = append(b, `,"output_ids":`...)
	b = wire.AppendIDs(b, r.OutputIDs)
	b = append(b, `,"meta_info":{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"finish_reason":`...)
	b = m.FinishReason.appendJSON(b)
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(m.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(m.CompletionTokens), 10)
	b = append(b, `,"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(m.CachedTokens), 10)
	if m.WeightVersion != "" { // a streamed event before the end does not know it yet
		b = append(b, `,"weight_version":`...)
		b = appendString(b, m.WeightVersion)
	}
	b = append(b, `,"num_retractions":`...)
	b = strconv.AppendInt(b, int64(m.NumRetractions), 10)
	if m.InputTokenLogprobs != nil {
		b = append(b, `,"input_token_logprobs":`...)
		b = m.InputTokenLogprobs.appendJSON(b)
	}
	if m.OutputTokenLogprobs != nil {
		b = append(b, `,"output_token_logprobs":`...)
		b = m.OutputTokenLogprobs.appendJSON(b)
	}
	if m.OutputTopLogprobs != nil {
		b = append(b, `,"output_top_logprobs":`...)
		b = m.OutputTopLogprobs.appendJSON(b)
	}
	b = append(b, `,"e2e_latency":`...)
	b = strconv.AppendFloat(b, m.E2ELatency, 'g', -1, 64)
	return append(b, "}}"...)
}

func (c *vllmContent) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, id := range c.ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendVLLMLogprob(b, id, c.lps[i])
		b = append(b, `,"top_logprobs":[`...)
		if c.tops != nil {
			for j, alt := range c.tops[i] {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendVLLMLogprob(b, alt.TokenID, alt.Logprob)
				b = append(b, '}')
			}
		}
		b = append(b, "]}"...)
	}
	return append(b, ']')
}

// appendVLLMLogprob writes a logprob entry of token id up to its closing
// brace: {"token":"token_id:N","token_id":N,"logprob":lp.
func appendVLLMLogprob(b []byte, id int32, lp float32) []byte {
	b = append(b, `{"token":"token_id:`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `","token_id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"logprob":`...)
	return appendFloat(b, finiteLogprob(lp))
}

func (r *vllmGenerateResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"request_id":`...)
	b = appendString(b, r.RequestID)
	b = append(b, `,"choices":[`...)
	for i := range r.Choices {
		ch := &r.Choices[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(ch.Index), 10)
		b = append(b, `,"finish_reason":`...)
		b = appendString(b, ch.FinishReason)
		b = append(b, `,"token_ids":`...)
		b = wire.AppendIDs(b, ch.TokenIDs)
		b = append(b, `,"logprobs":`...)
		if ch.Logprobs == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, `{"content":`...)
			b = ch.Logprobs.Content.appendJSON(b)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.Usage != nil {
		b = append(b, `,"usage":`...)
		b = r.Usage.appendJSON(b)
	}
	b = append(b, `,"num_cached_tokens":`...)
	b = strconv.AppendInt(b, int64(r.CachedTokens), 10)
	b = append(b, `,"weight_version":`...)
	b = strconv.AppendInt(b, r.WeightVersion, 10)
	return append(b, '}')
}

// appendJSON writes u as encoding/json would.
func (u *usage) appendJSON(b []byte) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	if u.PromptTokensDetails != nil {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(u.PromptTokensDetails.CachedTokens), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// writeRawJSON writes an already encoded JSON body.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
