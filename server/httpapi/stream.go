package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/wire"
	"github.com/agentrl/agentrl/tokenizer"
)

// sseStream writes server-sent events as they come. The status line and
// headers leave with the first event, so an engine that fails before its
// first token still gets a plain HTTP error.
type sseStream struct {
	w       http.ResponseWriter
	fl      http.Flusher
	started bool
}

func newSSEStream(w http.ResponseWriter) *sseStream {
	fl, _ := w.(http.Flusher)
	return &sseStream{w: w, fl: fl}
}

// event writes one "data:" event and flushes it; the error is the
// connection's (the client went away).
func (e *sseStream) event(data []byte) error {
	if !e.started {
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		e.w.WriteHeader(http.StatusOK)
		e.started = true
	}
	buf := make([]byte, 0, len(data)+8)
	buf = append(append(append(buf, "data: "...), data...), "\n\n"...)
	if _, err := e.w.Write(buf); err != nil {
		return fmt.Errorf("writing a streamed event: %w", err)
	}
	if e.fl != nil {
		e.fl.Flush()
	}
	return nil
}

// named writes one event with an "event:" name (Responses, Messages:
// the Anthropic SDK dispatches on it) and flushes it.
func (e *sseStream) named(name string, data []byte) error {
	if !e.started {
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		e.w.WriteHeader(http.StatusOK)
		e.started = true
	}
	buf := make([]byte, 0, len(name)+len(data)+16)
	buf = append(append(append(append(append(buf, "event: "...), name...), "\ndata: "...), data...), "\n\n"...)
	if _, err := e.w.Write(buf); err != nil {
		return fmt.Errorf("writing a streamed event: %w", err)
	}
	if e.fl != nil {
		e.fl.Flush()
	}
	return nil
}

// fail ends the stream with err: a plain HTTP error before the first event,
// else an error event (as SGLang and vLLM stream errors) and [DONE].
func (e *sseStream) fail(err error) {
	if !e.started {
		writeEngineError(e.w, err)
		return
	}
	b := appendString([]byte(`{"error":{"message":`), err.Error())
	b = append(b, `,"type":"server_error"}}`...)
	if e.event(b) == nil {
		e.done()
	}
}

// done writes the closing [DONE] event.
func (e *sseStream) done() {
	_ = e.event([]byte("[DONE]"))
}

// checkChunk fails a streamed chunk whose logprobs or top logprobs do not
// match its tokens.
func checkChunk(c server.Chunk, req server.GenerateRequest) error {
	if req.Params.Logprobs && len(c.Logprobs) != len(c.TokenIDs) {
		return &server.Error{Server: "engine", Op: "generate",
			Err: fmt.Errorf("engine streamed %d logprobs for %d tokens: %w", len(c.Logprobs), len(c.TokenIDs), server.ErrBadResponse)}
	}
	if req.Params.TopLogprobs > 0 && len(c.TopLogprobs) != len(c.TokenIDs) {
		return &server.Error{Server: "engine", Op: "generate",
			Err: fmt.Errorf("engine streamed %d top logprob lists for %d tokens: %w", len(c.TopLogprobs), len(c.TokenIDs), server.ErrBadResponse)}
	}
	return nil
}

// errClientGone marks an emit that failed because the response could not
// be written: there is nobody left to tell.
var errClientGone = errors.New("client went away")

// streamSGLangGenerate answers a streamed /generate with one cumulative
// event per chunk the engine emits (SGLang's default stream: text,
// output_ids and logprobs so far, finish_reason null; weight_version only
// in the last event, when the engine has said which weights produced it), then a last event
// equal to the non-streamed response.
func (s *Server) streamSGLangGenerate(w http.ResponseWriter, r *http.Request, st server.Streamer, p prepared, start time.Time) {
	sse := newSSEStream(w)
	var (
		ids   []int32
		lps   []float32
		tops  [][]server.TopLogprob
		texts []string
		text  strings.Builder
	)
	dec := s.newTextDecoder(p.skipSpecial)
	emit := func(c server.Chunk) error {
		if err := checkChunk(c, p.req); err != nil {
			return err
		}
		if len(c.TokenIDs) == 0 {
			return nil
		}
		ids = append(ids, c.TokenIDs...)
		lps = append(lps, c.Logprobs...)
		tops = append(tops, c.TopLogprobs...)
		if dec != nil {
			piece, err := dec.add(ids, c.TokenIDs)
			if err != nil {
				return fmt.Errorf("decoding the output: %w", err)
			}
			text.WriteString(piece)
		}
		resp := sglGenerateResponse{
			Text:      text.String(),
			OutputIDs: ids,
			MetaInfo: sglMeta{
				ID:               p.req.RequestID,
				PromptTokens:     len(p.req.PromptIDs),
				CompletionTokens: len(ids),
				// SGLang writes the server's weight version into every
				// event, not only the last.
				WeightVersion: s.versions.currentName(),
				E2ELatency:    time.Since(start).Seconds(),
			},
		}
		if p.logprobs {
			resp.MetaInfo.OutputTokenLogprobs = &logprobTriples{lps: lps, ids: ids}
			if p.textInLPs && s.cfg.Chat != nil {
				var err error
				if texts, err = s.tokenTexts(texts, c.TokenIDs); err != nil {
					return err
				}
				resp.MetaInfo.OutputTokenLogprobs.texts = texts
			}
			if p.req.Params.TopLogprobs > 0 {
				var err error
				if resp.MetaInfo.OutputTopLogprobs, err = s.newTopTriples(tops, p.textInLPs); err != nil {
					return err
				}
			}
		}
		if err := sse.event(resp.appendJSON(make([]byte, 0, 256+len(ids)*40))); err != nil {
			return fmt.Errorf("%w: %w", errClientGone, err)
		}
		return nil
	}
	out, err := st.GenerateStream(r.Context(), p.req, emit)
	if err == nil {
		err = checkOutput(out, p.req)
	}
	var body []byte
	if err == nil {
		body, err = s.sglangBody(p, out, start)
	}
	if err != nil {
		if !errors.Is(err, errClientGone) {
			sse.fail(err)
		}
		return
	}
	if sse.event(body) == nil {
		sse.done()
	}
}

// textDecoder turns a growing output into text pieces: the tokenizer's
// incremental decoder when it has one, else decoding the whole output
// again and handing out what it added.
type textDecoder struct {
	inc         *tokenizer.Decoder
	tok         Tokenizer
	skipSpecial bool
	sent        int // bytes handed out (the fallback)
}

// newTextDecoder returns nil without a tokenizer.
func (s *Server) newTextDecoder(skipSpecial bool) *textDecoder {
	if s.cfg.Chat == nil {
		return nil
	}
	d := &textDecoder{tok: s.cfg.Chat.Tokenizer, skipSpecial: skipSpecial}
	if t, ok := s.cfg.Chat.Tokenizer.(interface {
		NewDecoder(skipSpecial bool) *tokenizer.Decoder
	}); ok {
		d.inc = t.NewDecoder(skipSpecial)
	}
	return d
}

// add returns the text that the newly added ids (the tail of all) complete.
func (d *textDecoder) add(all, added []int32) (string, error) {
	if d.inc != nil {
		return d.inc.Add(added...)
	}
	full, err := d.tok.Decode(all, d.skipSpecial)
	if err != nil {
		return "", err
	}
	if len(full) < d.sent || !utf8.ValidString(full[d.sent:]) {
		// A character still being completed: wait for more tokens.
		return "", nil
	}
	piece := full[d.sent:]
	d.sent = len(full)
	return piece, nil
}

// streamer is the engine as a server.Streamer; an engine that only
// returns whole outputs streams them as one chunk at the end.
func (s *Server) streamer() server.Streamer {
	if st, ok := s.engine.(server.Streamer); ok {
		return st
	}
	return wholeStreamer{s.engine}
}

// wholeStreamer streams an engine without GenerateStream: no chunk until
// the end, where the caller takes the final output's tokens as the tail.
type wholeStreamer struct{ server.LLMServer }

func (w wholeStreamer) GenerateStream(ctx context.Context, req server.GenerateRequest, _ func(server.Chunk) error) (server.TokenOutput, error) {
	return w.Generate(ctx, req)
}

// sharedSSE serializes the events of the samples of one request, which
// stream from one goroutine each.
type sharedSSE struct {
	mu    sync.Mutex
	sse   *sseStream
	first bool // an event was sent
}

// send encodes the event that build returns (first says no event was sent
// before) and writes it.
func (l *sharedSSE) send(build func(first bool) any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := json.Marshal(build(!l.first))
	if err != nil {
		return fmt.Errorf("encoding a streamed event: %w", err)
	}
	l.first = true
	if err := l.sse.event(b); err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}

// streamEach runs run for every request at once, one goroutine each, and
// returns the first failure; the others are cancelled then. It returns
// once every run has.
func streamEach(ctx context.Context, reqs []server.GenerateRequest, run func(ctx context.Context, i int, req server.GenerateRequest) error) error {
	if len(reqs) == 1 {
		return run(ctx, 0, reqs[0])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx, i, req); err != nil {
				once.Do(func() {
					first = err
					cancel()
				})
			}
		}()
	}
	wg.Wait()
	return first
}

// errStopString is what emit returns to end a generation whose text
// completed a stop string: the engine stops there, as vLLM's stop checker
// ends the request after the token that completed it.
var errStopString = errors.New("stop string matched")

// choiceText turns one sample's streamed tokens into the text a response
// carries: decoded as they come, cut at the first stop string, less a
// final stop token when the response leaves it out.
type choiceText struct {
	dec   *textDecoder // nil without a tokenizer: no text
	stops *stopScanner
	// trim leaves out a last token that stopped the generation, when
	// isStop says it is one (the end-of-turn token is not content).
	trim    bool
	isStop  func(int32) bool
	ids     []int32
	lps     []float32
	textIDs []int32 // the ids decoded so far
	pending bool    // ids' last token may be a stop token: decoded once another follows
}

func (s *Server) newChoiceText(skipSpecial bool, stops []string, include, trim bool, isStop func(int32) bool) *choiceText {
	return &choiceText{dec: s.newTextDecoder(skipSpecial), stops: newStopScanner(stops, include), trim: trim, isStop: isStop}
}

// decode adds id's text and returns what became final.
func (c *choiceText) decode(id int32) (string, bool, error) {
	if c.dec == nil {
		return "", false, nil
	}
	c.textIDs = append(c.textIDs, id)
	piece, err := c.dec.add(c.textIDs, c.textIDs[len(c.textIDs)-1:])
	if err != nil {
		return "", false, fmt.Errorf("decoding the output: %w", err)
	}
	out, matched := c.stops.add(piece)
	return out, matched, nil
}

// take adds the tokens of a chunk and returns the text that became final
// and how many of the tokens are kept: all of them, or those up to the one
// that completed a stop string (matched), after which nothing is added.
func (c *choiceText) take(ids []int32, lps []float32) (text string, kept int, matched bool, err error) {
	var b strings.Builder
	for j, id := range ids {
		if c.pending {
			c.pending = false
			piece, m, err := c.decode(c.ids[len(c.ids)-1])
			b.WriteString(piece)
			if err != nil || m {
				return b.String(), j, m, err
			}
		}
		c.ids = append(c.ids, id)
		if lps != nil {
			c.lps = append(c.lps, lps[j])
		}
		if c.trim && c.isStop(id) {
			c.pending = true
			continue
		}
		piece, m, err := c.decode(id)
		b.WriteString(piece)
		if err != nil || m {
			return b.String(), j + 1, m, err
		}
	}
	return b.String(), len(ids), false, nil
}

// end takes the final output: the tokens it holds beyond the chunks (an
// engine may batch its tail into it), then the held-back text. It returns
// the tail kept, the rest of the text, and the sample's output as the
// response reports it (cut at a stop string, which counts as a stop).
func (c *choiceText) end(out server.TokenOutput, matched bool) (tail []int32, tailLps []float32, text string, final server.TokenOutput, err error) {
	final = out
	from := len(c.ids)
	if !matched {
		if len(out.TokenIDs) < from {
			return nil, nil, "", final, &server.Error{Server: "engine", Op: "generate",
				Err: fmt.Errorf("engine streamed %d tokens but returned %d: %w", from, len(out.TokenIDs), server.ErrBadResponse)}
		}
		var lps []float32
		if out.Logprobs != nil {
			lps = out.Logprobs[from:]
		}
		var kept int
		text, kept, matched, err = c.take(out.TokenIDs[from:], lps)
		if err != nil {
			return nil, nil, "", final, err
		}
		tail = out.TokenIDs[from : from+kept]
		if lps != nil {
			tailLps = lps[:kept]
		}
	}
	if c.pending && !matched {
		c.pending = false
		last := c.ids[len(c.ids)-1]
		if out.StopReason != server.StopEOS {
			// Not what stopped the generation: it is text.
			piece, m, err := c.decode(last)
			if err != nil {
				return nil, nil, "", final, err
			}
			text += piece
			matched = m
		}
	}
	text += c.stops.flush()
	final.TokenIDs, final.Logprobs = c.ids, c.lps
	if final.TokenIDs == nil {
		final.TokenIDs = []int32{}
	}
	if matched {
		final.StopReason = server.StopEOS
	}
	return tail, tailLps, text, final, nil
}

// streamGenerate runs one sample through st: chunk gets each chunk's kept
// tokens and final text, and the result is the sample's output with its
// last tokens and text (see choiceText.end). A stop string ends the
// generation early and is reported as matched.
//
// With Params.TopLogprobs, chunk gets the kept tokens' alternatives too
// (else nil), and the output's TopLogprobs are cut as its tokens are.
func streamGenerate(ctx context.Context, st server.Streamer, req server.GenerateRequest, c *choiceText,
	chunk func(text string, ids []int32, lps []float32, tops [][]server.TopLogprob) error) (tail []int32, tailLps []float32, text string, out server.TokenOutput, err error) {
	var tops [][]server.TopLogprob // the kept tokens'
	emit := func(ch server.Chunk) error {
		if err := checkChunk(ch, req); err != nil {
			return err
		}
		if len(ch.TokenIDs) == 0 {
			return nil
		}
		lps := ch.Logprobs
		if !req.Params.Logprobs {
			lps = nil
		}
		text, kept, matched, err := c.take(ch.TokenIDs, lps)
		if err != nil {
			return err
		}
		var klps []float32
		if lps != nil {
			klps = lps[:kept]
		}
		var ktops [][]server.TopLogprob
		if req.Params.TopLogprobs > 0 {
			ktops = ch.TopLogprobs[:kept:kept]
			tops = append(tops, ktops...)
		}
		if err := chunk(text, ch.TokenIDs[:kept], klps, ktops); err != nil {
			return err
		}
		if matched {
			return errStopString
		}
		return nil
	}
	out, err = st.GenerateStream(ctx, req, emit)
	matched := errors.Is(err, errStopString)
	if err != nil && !matched {
		return nil, nil, "", out, err
	}
	if !matched {
		if err := checkOutput(out, req); err != nil {
			return nil, nil, "", out, err
		}
	}
	if !req.Params.Logprobs {
		out.Logprobs = nil
	}
	tail, tailLps, text, final, err := c.end(out, matched)
	if err == nil && req.Params.TopLogprobs > 0 {
		// The tail follows the kept tokens; a checked output has its
		// alternatives (a matched stop string leaves no tail).
		from := len(tops)
		tops = append(tops, out.TopLogprobs[from:from+len(tail)]...)
		final.TopLogprobs = tops
		if final.TopLogprobs == nil {
			final.TopLogprobs = [][]server.TopLogprob{}
		}
	}
	return tail, tailLps, text, final, err
}

// streamCompletions answers a streamed /v1/completions as vLLM streams it
// (vllm-project/vllm vllm/entrypoints/openai/serving_completion.py
// completion_stream_generator): per chunk of tokens the engine samples, an
// event with the text they complete (held back only where a stop string
// may start), their logprobs and, on return_token_ids, their ids (the
// prompt's in the sample's first event); the last event of a sample adds
// finish_reason and stop_reason. With n > 1 the samples run at once and
// their events interleave, each choice naming its index. On include_usage
// a last event has the usage of all the samples.
func (s *Server) streamCompletions(w http.ResponseWriter, r *http.Request, st server.Streamer, p prepared) {
	sse := &sharedSSE{sse: newSSEStream(w)}
	head := completionResponse{ID: "cmpl-" + p.req.RequestID, Object: "text_completion", Created: time.Now().Unix(), Model: s.cfg.Model}
	reqs := sampleRequests(&p)
	outs := make([]server.TokenOutput, len(reqs))
	err := streamEach(r.Context(), reqs, func(ctx context.Context, i int, req server.GenerateRequest) error {
		// Checked for every streamed token: a set, built once.
		stopIDs := req.Params.StopTokenIDs
		if s.cfg.Chat != nil {
			stopIDs = append(slices.Clip(stopIDs), s.cfg.Chat.Tokenizer.EOSTokenIDs()...)
		}
		c := s.newChoiceText(p.skipSpecial, p.stops, p.includeStop, p.trimStop, server.NewStopSet(stopIDs).Has)
		offset, sent := 0, false
		send := func(text string, ids []int32, lps []float32, tops [][]server.TopLogprob, finish *string, stopReason any, weights int64) error {
			ch := completionChoice{Index: i, Text: text, FinishReason: finish, StopReason: stopReason}
			if p.returnIDs {
				ch.TokenIDs = idsField(ids)
				if !sent {
					ch.PromptTokenID = p.req.PromptIDs
				}
			}
			if p.logprobs {
				ch.Logprobs, offset = s.completionLogprobs(p, ids, lps, tops, offset)
			}
			sent = true
			return sse.send(func(bool) any {
				ev := head
				ev.Choices, ev.WeightVersion = []completionChoice{ch}, weights
				return ev
			})
		}
		tail, tailLps, text, out, err := streamGenerate(ctx, st, req, c, func(text string, ids []int32, lps []float32, tops [][]server.TopLogprob) error {
			if text == "" && (len(ids) == 0 || !(p.returnIDs || p.logprobs)) {
				return nil
			}
			return send(text, ids, lps, tops, nil, nil, 0)
		})
		if err != nil {
			return err
		}
		outs[i] = out
		fr := finishString(out.StopReason)
		var stopReason any
		if m := c.stops.matched; m != "" {
			stopReason = m // vLLM: the matched stop string
		} else if n := len(out.TokenIDs); n > 0 && out.StopReason == server.StopEOS && contains(req.Params.StopTokenIDs, out.TokenIDs[n-1]) {
			stopReason = out.TokenIDs[n-1] // the stop_token_id, but null for EOS
		}
		return send(text, tail, tailLps, tailTops(out, tail), &fr, stopReason, out.WeightVersion)
	})
	if err == nil && p.includeUsage {
		u := samplesUsage(len(p.req.PromptIDs), outs)
		err = sse.send(func(bool) any {
			ev := head
			ev.Choices, ev.Usage, ev.WeightVersion = []completionChoice{}, u, outs[0].WeightVersion
			return ev
		})
	}
	if err != nil {
		if !errors.Is(err, errClientGone) {
			sse.sse.fail(err)
		}
		return
	}
	sse.sse.done()
}

// tailTops is the alternatives of tail, the last tokens of out (nil when
// out has none).
func tailTops(out server.TokenOutput, tail []int32) [][]server.TopLogprob {
	if out.TopLogprobs == nil {
		return nil
	}
	return out.TopLogprobs[len(out.TopLogprobs)-len(tail):]
}

// samplesUsage is the usage of a request's samples: completion tokens
// summed, cached tokens the most any sample found.
func samplesUsage(prompt int, outs []server.TokenOutput) *usage {
	completion, cached := 0, 0
	for _, o := range outs {
		completion += len(o.TokenIDs)
		cached = max(cached, o.CachedTokens)
	}
	u := &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	u.PromptTokensDetails = &struct {
		CachedTokens int `json:"cached_tokens"`
	}{cached}
	return u
}

// streamChat answers a streamed chat request as vLLM streams it
// (vllm-project/vllm vllm/entrypoints/openai/serving_chat.py
// chat_completion_stream_generator): for each sample, its role first, then
// per chunk of tokens the engine samples a delta with the reasoning and
// content they complete and the tool calls that became final (through the
// streaming tool-call parser, which holds back text that may still become
// a call; a call leaves whole, with its index, once written), with the
// tokens' logprobs and, on return_token_ids, their ids; the last delta of
// a sample carries its finish_reason. Stop strings apply to the raw text
// before parsing, as in vLLM, and end the generation where they complete.
// With n > 1 the samples run at once and interleave, each choice naming
// its index. On include_usage a last event has the usage.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, st server.Streamer, p preparedChat) {
	// Check the parser before anything is sent.
	if err := s.checkParser(p); err != nil {
		writeEngineError(w, err)
		return
	}
	sse := &sharedSSE{sse: newSSEStream(w)}
	head := chatResponse{ID: "chatcmpl-" + p.callID, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: s.cfg.Model}
	reqs := sampleRequests(&p.prepared)
	outs := make([]server.TokenOutput, len(reqs))
	err := streamEach(r.Context(), reqs, func(ctx context.Context, i int, req server.GenerateRequest) error {
		cs := &chatEvents{s: s, p: &p, sse: sse, head: head, index: i}
		ts := s.newTurnStream(&p)
		last, turn, out, err := ts.run(ctx, st, req, cs.delta)
		if err == nil {
			// Durable before the sample's last tokens and finish_reason.
			err = p.hook.record(i, out, turn)
		}
		if err != nil {
			return err
		}
		outs[i] = out
		finish := chatFinish(turn)
		return cs.send(last, &finish)
	})
	if err == nil && p.includeUsage {
		u := samplesUsage(len(p.req.PromptIDs), outs)
		err = sse.send(func(bool) any {
			ev := head
			ev.Choices, ev.Usage = []chatChoice{}, u
			return ev
		})
	}
	if err != nil {
		if !errors.Is(err, errClientGone) {
			sse.sse.fail(err)
		}
		return
	}
	sse.sse.done()
}

// chatFormat is the parser format of p's turns: the server's tool parser,
// or, when calls are not parsed, hermes only to split the reasoning.
func (s *Server) chatFormat(p preparedChat) string {
	if !p.parse {
		return "hermes"
	}
	return s.cfg.Chat.ToolParser
}

// turnDelta is what a chunk of engine tokens adds to a streamed turn: the
// reasoning and content it completes and the calls that became final (any
// may be empty), with the chunk's kept tokens and their logprobs.
type turnDelta struct {
	reasoning, content string
	calls              []turnCall
	ids                []int32
	lps                []float32
	tops               [][]server.TopLogprob // nil unless asked for
}

// hasText says whether d adds reasoning, content or calls.
func (d turnDelta) hasText() bool {
	return d.reasoning != "" || d.content != "" || len(d.calls) > 0
}

// turnStream is the one producer of streamed turns, shared by every
// dialect: it runs one sample through the engine, cuts it at stop strings,
// decodes it and feeds the streaming tool-call parser, and hands each
// chunk's turnDelta to the dialect's writer. The turn it returns is the
// sum of the deltas, so a stream accumulates to the non-streamed answer.
type turnStream struct {
	s *Server
	p *preparedChat

	prs       *parser.Stream  // nil: the text is all content
	raw       strings.Builder // the text given to the parser
	content   strings.Builder // content handed out
	reasoning strings.Builder // reasoning handed out
	calls     []turnCall      // calls handed out
}

func (s *Server) newTurnStream(p *preparedChat) *turnStream { return &turnStream{s: s, p: p} }

// run streams req: emit gets every chunk's delta but the last, which run
// returns with the finished turn and the sample's output (as the
// non-streamed response reports it) for the writer to close the turn with.
func (t *turnStream) run(ctx context.Context, st server.Streamer, req server.GenerateRequest, emit func(turnDelta) error) (turnDelta, turnResult, server.TokenOutput, error) {
	s, p := t.s, t.p
	skipSpecial := p.skipSpecial
	if p.parse || s.cfg.Chat.Reasoning {
		// As chatTurn does: parsers see special tokens (some formats are
		// written in them), plain text does not.
		prs, err := parser.NewStream(s.chatFormat(*p), parser.Options{ThinkAware: s.cfg.Chat.Reasoning, Tools: p.tools})
		if err != nil {
			return turnDelta{}, turnResult{}, server.TokenOutput{}, fmt.Errorf("%w: tool parser: %v", server.ErrBadRequest, err)
		}
		t.prs, skipSpecial = prs, false
	}
	ct := s.newChoiceText(skipSpecial, p.stops, false, true, server.NewStopSet(req.Params.StopTokenIDs).Has)
	tail, tailLps, text, out, err := streamGenerate(ctx, st, req, ct, func(text string, ids []int32, lps []float32, tops [][]server.TopLogprob) error {
		d, err := t.delta(text)
		if err != nil {
			return err
		}
		d.ids, d.lps, d.tops = ids, lps, tops
		return emit(d)
	})
	if err != nil {
		return turnDelta{}, turnResult{}, out, err
	}
	d, err := t.delta(text)
	if err != nil {
		return turnDelta{}, turnResult{}, out, err
	}
	if t.prs != nil {
		t.closeParser(&d)
	}
	d.ids, d.lps, d.tops = tail, tailLps, tailTops(out, tail)
	turn := turnResult{content: t.content.String(), reasoning: t.reasoning.String(), calls: t.calls, stop: out.StopReason,
		matched: ct.stops.matched,
		usage:   turnUsage{prompt: len(p.req.PromptIDs), completion: len(out.TokenIDs), cached: out.CachedTokens}}
	return d, turn, out, nil
}

// delta is what text adds to the turn: content, or through the parser
// reasoning, content and finished calls.
func (t *turnStream) delta(text string) (turnDelta, error) {
	if text == "" {
		return turnDelta{}, nil
	}
	if t.prs == nil {
		t.content.WriteString(text)
		return turnDelta{content: text}, nil
	}
	t.raw.WriteString(text)
	u, err := t.prs.Feed(text)
	if err != nil {
		return turnDelta{}, fmt.Errorf("parsing the output: %w", err)
	}
	return t.update(u), nil
}

// update turns a parser update into a delta.
func (t *turnStream) update(u parser.Update) turnDelta {
	d := turnDelta{reasoning: u.Reasoning, content: u.Content}
	t.reasoning.WriteString(u.Reasoning)
	t.content.WriteString(u.Content)
	if t.p.parse {
		for _, call := range u.Calls {
			tc := turnCall{id: newCallID(), name: call.Function.Name, arguments: call.Function.Arguments}
			t.calls = append(t.calls, tc)
			d.calls = append(d.calls, tc)
		}
	}
	return d
}

// closeParser ends the turn into d: what the parser still held. A turn
// whose calls were not to be parsed, or with a malformed call, is content
// as written (as chatTurn answers): the content sent is then a prefix of
// it, since the parser held back the calls' text.
func (t *turnStream) closeParser(d *turnDelta) {
	u, res := t.prs.Close()
	asText := (!t.p.parse && len(res.Calls) > 0) || (len(res.Errors) > 0 && len(t.calls) == 0)
	if asText {
		want := t.raw.String()
		if t.s.cfg.Chat.Reasoning {
			want = stripReasoning(want)
		}
		if rest, ok := strings.CutPrefix(want, t.content.String()); ok {
			u.Content = rest
		}
		u.Calls = nil
	}
	more := t.update(u)
	// Both the last text and the parser's rest: one delta.
	d.reasoning += more.reasoning
	d.content += more.content
	d.calls = append(d.calls, more.calls...)
}

// chatEvents writes one sample of a streamed chat answer: turn deltas as
// chat.completion.chunk events, the role first.
type chatEvents struct {
	s     *Server
	p     *preparedChat
	sse   *sharedSSE
	head  chatResponse
	index int

	roleSent  bool
	callsSent int
}

func (c *chatEvents) delta(d turnDelta) error { return c.send(d, nil) }

// message is d as chat's delta message; nil when d adds no text.
func (c *chatEvents) message(d turnDelta) *chatMessage {
	if !d.hasText() {
		return nil
	}
	var m chatMessage
	if d.reasoning != "" {
		m.ReasoningContent = &d.reasoning
	}
	if d.content != "" {
		m.Content = &d.content
	}
	m.ToolCalls = chatToolCalls(d.calls, true, c.callsSent)
	c.callsSent += len(d.calls)
	return &m
}

// send writes a delta with the tokens it came with (finish set: the last,
// always written); a sample's first event carries the role (and, the
// stream's first, the prompt's ids on return_token_ids, as vLLM sends
// them).
func (c *chatEvents) send(td turnDelta, finish *string) error {
	p := c.p
	ids, lps := td.ids, td.lps
	d := c.message(td)
	withTokens := len(ids) > 0 && (p.logprobs || p.returnIDs)
	if d == nil && finish == nil && !withTokens {
		return nil
	}
	if d == nil {
		d = &chatMessage{}
	}
	if !c.roleSent {
		c.roleSent = true
		empty := ""
		err := c.sse.send(func(first bool) any {
			ev := c.head
			ev.Choices = []chatChoice{{Index: c.index, Delta: &chatMessage{Role: chat.RoleAssistant, Content: &empty}}}
			if first && p.returnIDs {
				ev.PromptTokenIDs = p.req.PromptIDs
			}
			return ev
		})
		if err != nil {
			return err
		}
	}
	ch := chatChoice{Index: c.index, Delta: d, FinishReason: finish}
	if p.logprobs && len(ids) > 0 {
		lp, err := c.s.chatLogprobEntries(ids, lps, td.tops)
		if err != nil {
			return err
		}
		ch.Logprobs = lp
	}
	if p.returnIDs {
		ch.TokenIDs = idsField(ids)
	}
	return c.sse.send(func(bool) any {
		ev := c.head
		ev.Choices = []chatChoice{ch}
		return ev
	})
}

// streamVLLMGenerate answers a streamed /inference/v1/generate as vLLM
// streams it (vllm-project/vllm
// vllm/entrypoints/serve/disagg/serving.py@0001948bc76939369ca855c90b36d81256477e85
// ServingTokens.serve_tokens_stream_generator): an event per chunk of
// tokens the engine samples, {"request_id", "choices": [{"index",
// "logprobs", "finish_reason": null, "token_ids": the chunk's}]}, then one
// with finish_reason (and the tokens the final output adds, if any) and
// agentrl's num_cached_tokens and weight_version, and on
// stream_options.include_usage {"request_id", "choices": [], "usage"}.
func (s *Server) streamVLLMGenerate(w http.ResponseWriter, r *http.Request, st server.Streamer, p prepared) {
	sse := newSSEStream(w)
	req := p.req
	sent := 0
	emit := func(c server.Chunk) error {
		if err := checkChunk(c, req); err != nil {
			return err
		}
		if len(c.TokenIDs) == 0 {
			return nil
		}
		sent += len(c.TokenIDs)
		b := appendVLLMStreamChunk(make([]byte, 0, 128+len(c.TokenIDs)*80), req.RequestID, c.TokenIDs, c.Logprobs, c.TopLogprobs, p.logprobs, "")
		if err := sse.event(append(b, '}')); err != nil {
			return fmt.Errorf("%w: %w", errClientGone, err)
		}
		return nil
	}
	out, err := st.GenerateStream(r.Context(), req, emit)
	if err == nil {
		err = checkOutput(out, req)
	}
	if err == nil && len(out.TokenIDs) < sent {
		err = &server.Error{Server: "engine", Op: "generate",
			Err: fmt.Errorf("engine streamed %d tokens but returned %d: %w", sent, len(out.TokenIDs), server.ErrBadResponse)}
	}
	if err == nil {
		var lps []float32
		var tops [][]server.TopLogprob
		if p.logprobs {
			lps = out.Logprobs[sent:]
		}
		if out.TopLogprobs != nil {
			tops = out.TopLogprobs[sent:]
		}
		b := appendVLLMStreamChunk(make([]byte, 0, 192), req.RequestID, out.TokenIDs[sent:], lps, tops, p.logprobs, finishString(out.StopReason))
		b = append(b, `,"num_cached_tokens":`...)
		b = strconv.AppendInt(b, int64(out.CachedTokens), 10)
		b = append(b, `,"weight_version":`...)
		b = strconv.AppendInt(b, out.WeightVersion, 10)
		if err = sse.event(append(b, '}')); err != nil {
			err = fmt.Errorf("%w: %w", errClientGone, err)
		}
	}
	if err == nil && p.includeUsage {
		n := len(out.TokenIDs)
		b := appendString([]byte(`{"request_id":`), req.RequestID)
		b = fmt.Appendf(b, `,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			len(req.PromptIDs), n, len(req.PromptIDs)+n)
		if err = sse.event(b); err != nil {
			err = fmt.Errorf("%w: %w", errClientGone, err)
		}
	}
	if err != nil {
		if !errors.Is(err, errClientGone) {
			sse.fail(err)
		}
		return
	}
	sse.done()
}

// appendVLLMStreamChunk writes a streamed /inference/v1/generate event up
// to its last closing brace (left to the caller, which may add fields):
// one choice, index 0, with ids and (on logprobs) their logprobs, and
// finish_reason null while finish is "".
func appendVLLMStreamChunk(b []byte, rid string, ids []int32, lps []float32, tops [][]server.TopLogprob, logprobs bool, finish string) []byte {
	b = append(b, `{"request_id":`...)
	b = appendString(b, rid)
	b = append(b, `,"choices":[{"index":0,"logprobs":`...)
	if logprobs {
		b = append(b, `{"content":`...)
		b = (&vllmContent{ids: ids, lps: lps, tops: tops}).appendJSON(b)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, finish)
	}
	b = append(b, `,"token_ids":`...)
	b = wire.AppendIDs(b, nonNil(ids))
	return append(b, "}]"...)
}
