package sglang

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/httpclient"
)

// GenerateStream is Generate with "stream": true: the tokens are handed to
// emit as SGLang streams them, and the returned output is what Generate
// would return (the tokens and logprobs are those emitted, in order). It
// implements server.Streamer.
//
// SGLang streams either the whole output so far in every event (its
// default) or only what is new (--incremental-streaming-output); the
// client tells the two apart and emits only new tokens either way (see
// streamState.event). A server that answers the whole result at once
// (no event stream) has it emitted as one chunk.
//
// When ctx ends, or emit returns an error, the connection is closed (SGLang
// aborts a request whose stream consumer went away) and an abort is sent
// as Generate does; the error wraps ctx.Err() or emit's error. An error
// event from the server, or a stream that ends before the request
// finished, is an error naming the server; the tokens streamed so far are
// returned with it, marked StopAbort.
func (c *Client) GenerateStream(ctx context.Context, req server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	if emit == nil {
		return server.TokenOutput{}, c.t.Errorf("generate", 0, false, fmt.Errorf("GenerateStream needs an emit function: %w", server.ErrBadRequest))
	}
	if req.RequestID == "" {
		req.RequestID = httpclient.NewRequestID()
	}
	body, err := appendGenerateRequest(make([]byte, 0, 256+len(req.PromptIDs)*7), req, true)
	if err != nil {
		return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
	}
	st := &streamState{req: req, wantLogprobs: req.Params.Logprobs, emit: emit}
	hdr := http.Header{RoutingHeader: {req.RequestID}}
	err = c.t.Stream(ctx, "generate", "/generate", body, hdr, httpclient.StreamHandler{Event: st.event, Whole: st.whole})
	if err == nil && !st.finished {
		err = c.t.Errorf("generate", http.StatusOK, false, httpclient.BadResponse("/generate: the event stream ended at [DONE] before the request finished (no finish_reason)"))
	}
	if err != nil && st.finished && errors.Is(err, httpclient.ErrStreamCut) {
		// Everything arrived; only the closing [DONE] was lost.
		err = nil
	}
	if err != nil {
		if ctx.Err() != nil || st.emitErr != nil {
			c.abortAfterCancel(ctx, req.RequestID)
		}
		var se *server.Error
		if !errors.As(err, &se) {
			err = c.t.Errorf("generate", http.StatusOK, false, err)
		}
		return st.partial(), err
	}
	return st.output(), nil
}

// streamState turns the events of one streamed /generate into chunks.
type streamState struct {
	req          server.GenerateRequest
	wantLogprobs bool
	emit         func(server.Chunk) error
	emitErr      error // emit's error, when it failed

	ids  []int32
	lps  []float32
	tops [][]server.TopLogprob // when the request asked for them
	// mode is how the server streams, once an event told: cumulative
	// (each event holds the whole output so far) or incremental (only
	// what is new).
	mode     streamMode
	finished bool
	out      server.TokenOutput // the metadata of the finishing event
	version  json.RawMessage    // the last weight_version seen
}

type streamMode int

const (
	modeUnknown streamMode = iota
	modeCumulative
	modeIncremental
)

// streamChunk is one event of a streamed /generate. Upstream
// (sgl-project/sglang): http_server.py generate_request @ 0025436e writes
// each output of TokenizerManager.generate_request as `data: <json>\n\n`,
// a ValueError as `data: {"error": {"message": ...}}`, then
// `data: [DONE]\n\n`; managers/tokenizer_manager_components/
// output_processor.py _build_out_dict_token_id/_str @ 29ff63a5 gives
// output_ids as the whole output so far (state.output_ids) unless
// incremental_streaming_output is set, when it is the new ids only; and
// logprob_ops.py @ 229224a3 (fill_meta_info, slice_streaming_output_meta_info)
// gives meta_info.output_token_logprobs likewise (cumulative, or sliced to
// the new tokens), while output_token_logprobs_length and completion_tokens
// always count the whole output. finish_reason is null until the last event.
type streamChunk struct {
	OutputIDs json.RawMessage `json:"output_ids"`
	MetaInfo  *struct {
		FinishReason              json.RawMessage `json:"finish_reason"`
		PromptTokens              int             `json:"prompt_tokens"`
		CompletionTokens          *int            `json:"completion_tokens"`
		CachedTokens              int             `json:"cached_tokens"`
		WeightVersion             json.RawMessage `json:"weight_version"`
		NumRetractions            int             `json:"num_retractions"`
		OutputTokenLogprobs       json.RawMessage `json:"output_token_logprobs"`
		OutputTokenLogprobsLength *int            `json:"output_token_logprobs_length"`
		// Sliced as output_token_logprobs is (logprob_ops.py, same
		// functions).
		OutputTopLogprobs json.RawMessage `json:"output_top_logprobs"`
	} `json:"meta_info"`
}

// event reads one event and emits what it adds.
func (st *streamState) event(data []byte) error {
	if err := httpclient.StreamedError(data); err != nil {
		return err
	}
	var ch streamChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return httpclient.BadResponse("/generate stream: invalid event JSON: %v", err)
	}
	if ch.MetaInfo == nil {
		return httpclient.BadResponse("/generate stream: event has no meta_info")
	}
	if st.finished {
		return httpclient.BadResponse("/generate stream: an event after the one that finished the request")
	}
	m := ch.MetaInfo
	var ids []int32
	if isSet(ch.OutputIDs) {
		if err := json.Unmarshal(ch.OutputIDs, &ids); err != nil {
			return httpclient.BadResponse("/generate stream: output_ids: expected a list of token ids: %v", err)
		}
	}
	var lps []float32
	var lpIDs []int32
	if isSet(m.OutputTokenLogprobs) {
		var err error
		if lps, lpIDs, err = parseLogprobTriples(m.OutputTokenLogprobs); err != nil {
			return httpclient.BadResponse("/generate stream: meta_info.output_token_logprobs%v", err)
		}
	}
	if ids == nil {
		// Older servers give the ids only inside the logprob entries.
		ids = lpIDs
	}
	for i, id := range ids {
		if id < 0 {
			return httpclient.BadResponse("/generate stream: output_ids[%d] is negative (%d)", i, id)
		}
	}
	total := m.CompletionTokens
	if total == nil {
		total = m.OutputTokenLogprobsLength
	}
	st.learnMode(ids, total)
	added := ids
	had := len(st.ids)
	if st.mode == modeCumulative {
		if len(ids) < had || !slices.Equal(ids[:had], st.ids) {
			return httpclient.BadResponse("/generate stream: output_ids (%d ids) do not extend the %d already streamed, as a cumulative stream must", len(ids), had)
		}
		added = ids[had:]
	}
	var addedLps []float32
	if st.wantLogprobs {
		start := 0
		if st.mode == modeCumulative {
			start = had
		}
		switch {
		case lps == nil && len(added) > 0:
			return httpclient.BadResponse("/generate stream: logprobs were requested but meta_info.output_token_logprobs is missing")
		case len(lps)-start != len(added) || start > len(lps):
			return httpclient.BadResponse("/generate stream: meta_info.output_token_logprobs has %d entries for %d output_ids", len(lps), len(ids))
		}
		for i, id := range added {
			if lpIDs[start+i] != id {
				return httpclient.BadResponse("/generate stream: meta_info.output_token_logprobs[%d] is for token %d but the output token is %d", start+i, lpIDs[start+i], id)
			}
		}
		addedLps = lps[start:]
	}
	var addedTops [][]server.TopLogprob
	if k := st.req.Params.TopLogprobs; k > 0 && len(added) > 0 {
		if !isSet(m.OutputTopLogprobs) {
			return httpclient.BadResponse("/generate stream: top logprobs were requested but meta_info.output_top_logprobs is missing")
		}
		tops, err := parseTopLogprobs(m.OutputTopLogprobs, k)
		if err != nil {
			return httpclient.BadResponse("/generate stream: meta_info.output_top_logprobs%v", err)
		}
		start := 0
		if st.mode == modeCumulative {
			start = had
		}
		if start > len(tops) || len(tops)-start != len(added) {
			return httpclient.BadResponse("/generate stream: meta_info.output_top_logprobs has %d entries for %d output_ids", len(tops), len(ids))
		}
		addedTops = tops[start:]
	}
	if isSet(m.WeightVersion) {
		st.version = m.WeightVersion
	}
	if isSet(m.FinishReason) {
		reason, err := parseFinishReason(m.FinishReason)
		if err != nil {
			return fmt.Errorf("/generate stream: %w", err)
		}
		st.out.StopReason = reason
		st.out.PromptTokens = m.PromptTokens
		st.out.CachedTokens = m.CachedTokens
		st.out.Retractions = m.NumRetractions
		if st.out.WeightVersion, err = parseWeightVersion(st.version); err != nil {
			return fmt.Errorf("/generate stream: %w", err)
		}
		if st.req.Params.PromptLogprobs {
			// Every event carries the prompt's logprobs whole (they are
			// not among the keys incremental streaming slices); the
			// last event's are read.
			if st.out.PromptLogprobs, err = parseInputLogprobs(data, st.req); err != nil {
				return fmt.Errorf("/generate stream: %w", err)
			}
		}
		st.finished = true
	}
	return st.add(added, addedLps, addedTops)
}

// learnMode decides, at the first event that can tell, whether the server
// streams cumulatively. The first event with tokens reads the same either
// way; after it, completion_tokens (or output_token_logprobs_length),
// which count the whole output in both modes, say which: equal to the
// event's ids in a cumulative stream, to the ids streamed plus the
// event's in an incremental one. Without either count, an event whose ids
// begin with all the ids streamed so far is read as cumulative: it can be
// mistaken only when an incremental event happens to repeat the whole
// output so far, which no SGLang build without these counts streams.
func (st *streamState) learnMode(ids []int32, total *int) {
	had := len(st.ids)
	if st.mode != modeUnknown || had == 0 {
		return
	}
	if total != nil {
		switch *total {
		case len(ids):
			st.mode = modeCumulative
			return
		case had + len(ids):
			st.mode = modeIncremental
			return
		}
	}
	if len(ids) >= had && slices.Equal(ids[:had], st.ids) {
		st.mode = modeCumulative
	} else {
		st.mode = modeIncremental
	}
}

// add records and emits new tokens.
func (st *streamState) add(ids []int32, lps []float32, tops [][]server.TopLogprob) error {
	if len(ids) == 0 {
		return nil
	}
	st.ids = append(st.ids, ids...)
	c := server.Chunk{TokenIDs: ids}
	if st.wantLogprobs {
		st.lps = append(st.lps, lps...)
		c.Logprobs = lps
	}
	if st.req.Params.TopLogprobs > 0 {
		st.tops = append(st.tops, tops...)
		c.TopLogprobs = tops
	}
	if err := st.emit(c); err != nil {
		st.emitErr = err
		return fmt.Errorf("emit: %w", err)
	}
	return nil
}

// whole reads an answer that is not an event stream: the response a
// non-streaming /generate gives, emitted as one chunk.
func (st *streamState) whole(body []byte) error {
	out, err := ParseGenerateResponse(body, st.wantLogprobs)
	if err == nil && st.req.Params.PromptLogprobs {
		out.PromptLogprobs, err = parseInputLogprobs(body, st.req)
	}
	if err == nil && st.req.Params.TopLogprobs > 0 {
		out.TopLogprobs, err = parseOutputTopLogprobs(body, st.req.Params.TopLogprobs, len(out.TokenIDs))
	}
	if err != nil {
		return err
	}
	st.out = out
	st.finished = true
	return st.add(out.TokenIDs, out.Logprobs, out.TopLogprobs)
}

// output is the finished request's output.
func (st *streamState) output() server.TokenOutput {
	out := st.out
	out.TokenIDs = st.ids
	if out.TokenIDs == nil {
		out.TokenIDs = []int32{}
	}
	out.Logprobs = nil
	if st.wantLogprobs {
		out.Logprobs = st.lps
		if out.Logprobs == nil {
			out.Logprobs = []float32{}
		}
	}
	out.TopLogprobs = nil
	if st.req.Params.TopLogprobs > 0 {
		out.TopLogprobs = st.tops
		if out.TopLogprobs == nil {
			out.TopLogprobs = [][]server.TopLogprob{}
		}
	}
	return out
}

// partial is what was streamed before a failure, marked aborted.
func (st *streamState) partial() server.TokenOutput {
	out := st.output()
	out.StopReason = server.StopAbort
	return out
}

var _ server.Streamer = (*Client)(nil)
