package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
)

// The conversation dialects, as Call.Dialect names them.
const (
	DialectChat      = "chat"      // POST /v1/chat/completions
	DialectResponses = "responses" // POST /v1/responses
	DialectMessages  = "messages"  // POST /v1/messages
)

// Recorder, set as Config.Recorder, is told of every call of the
// conversation dialects: once the chat template has rendered the prompt
// and before the engine sees it (Begin, which may give the engine another
// prompt), and with each sample's output before the response's last byte
// or the sample's final stream event is written (Recording.Record). So a
// client that saw an answer always has its call recorded. Black-box
// capture (package capture) is a Recorder: it wraps this serving path
// rather than copying it, so a recorded call is served exactly as an
// unrecorded one.
//
// With a Recorder the engine is always asked for logprobs (the record
// needs them); the response carries them only when the client asked.
type Recorder interface {
	// Begin is called with ctx the request's context (where a caller that
	// mounts the Server puts its own values, such as the rollout a call
	// belongs to). It may replace call.PromptIDs — for example with an
	// earlier call's exact prompt and sampled ids followed by only the new
	// messages' tokens, so history is never re-tokenized; the engine gets
	// what call.PromptIDs holds when Begin returns. An error refuses the
	// call: errors wrapping server.ErrBadRequest answer 400, others by
	// their kind (see server.Error), the rest 500.
	Begin(ctx context.Context, call *Call) (Recording, error)
}

// Call is one conversation call as the server prepared it.
type Call struct {
	Dialect  string
	Method   string
	Path     string
	Header   http.Header
	Body     []byte // the request as received
	Received time.Time
	// Messages are the conversation as the template saw it (roles system,
	// user, assistant and tool; list contents joined; tool-call arguments
	// as JSON objects), Tools and TemplateKwargs what went with them.
	Messages       []chat.Message
	Tools          []chat.ToolSchema
	TemplateKwargs map[string]any
	// Samples is the number of samples asked for (OpenAI n).
	Samples int
	// PromptIDs is the rendered prompt; see Recorder.Begin.
	PromptIDs []int32
	// Vision is the conversation's images, in the order of their blocks
	// in PromptIDs (each block expanded to its image's count); nil
	// without images. A prompt Begin gives the engine must hold the same
	// blocks, expanded.
	Vision *server.Vision
	// Params are the sampling parameters the engine is given: the
	// request's, or the defaults for those it omits. They are computed
	// after Begin (the token budget depends on the prompt Begin chose),
	// so a Recording that keeps the *Call reads them in Record.
	Params server.SamplingParams
}

// Recording receives the outcome of one call that Begin accepted.
type Recording interface {
	// Record is called once per sample with its output as answered (cut
	// at a stop string) and the assistant message it became, before that
	// sample's answer is complete on the wire. An error fails the call
	// instead of answering it: an answer is never sent unrecorded.
	Record(ctx context.Context, sample int, out server.TokenOutput, answer chat.Message) error
	// Abort is called once, at the end of a call whose samples were not
	// all recorded (a refused request, an engine error, a client that
	// went away), with why.
	Abort(reason error)
}

// callHook carries one call's Recording from the decoder to the handler.
type callHook struct {
	rec       Recorder
	ctx       context.Context
	call      Call
	recording Recording
	// recorded counts the samples recorded: streamed samples run at once.
	recorded atomic.Int32
	samples  int
	ended    bool
}

// newHook returns the hook of a call read from r with body data, or nil
// when the server has no Recorder.
func (s *Server) newHook(r *http.Request, data []byte, dialect string) *callHook {
	if s.cfg.Recorder == nil {
		return nil
	}
	return &callHook{rec: s.cfg.Recorder, ctx: r.Context(), call: Call{Dialect: dialect, Method: r.Method, Path: r.URL.Path,
		Header: r.Header.Clone(), Body: data, Received: time.Now()}}
}

// begin hands the prepared call to the Recorder; it may replace p's
// prompt ids.
func (h *callHook) begin(msgs []chat.Message, c conversation, p *preparedChat) error {
	if h == nil {
		return nil
	}
	h.call.Messages, h.call.Tools, h.call.TemplateKwargs = msgs, c.tools, c.templateKwargs
	h.call.Samples, h.call.PromptIDs, h.call.Vision = max(p.n, 1), p.req.PromptIDs, p.req.Vision
	rec, err := h.rec.Begin(h.ctx, &h.call)
	if err != nil {
		var re *errRequest
		if errors.As(err, &re) {
			return err
		}
		return &errRequest{status: statusOf(err), msg: err.Error()}
	}
	if rec == nil {
		return errors.New("httpapi: Recorder.Begin returned no Recording")
	}
	if len(h.call.PromptIDs) == 0 {
		return badRequest("the recorder gave the engine an empty prompt")
	}
	if v := p.req.Vision; v != nil {
		if _, err := v.ImageStarts(h.call.PromptIDs); err != nil {
			rec.Abort(err)
			return fmt.Errorf("httpapi: the recorder's prompt does not hold the images' blocks: %w", err)
		}
	}
	h.recording, h.samples = rec, h.call.Samples
	p.req.PromptIDs = h.call.PromptIDs
	return nil
}

// sampled keeps the engine's final sampling parameters in the call (see
// Call.Params).
func (h *callHook) sampled(p server.SamplingParams) {
	if h != nil {
		h.call.Params = p
	}
}

// record hands sample i's answer to the Recording, under the request's
// context.
func (h *callHook) record(i int, out server.TokenOutput, t turnResult) error {
	if h == nil || h.recording == nil {
		return nil
	}
	if err := h.recording.Record(h.ctx, i, out, turnMessage(t)); err != nil {
		return fmt.Errorf("recording the answer: %w", err)
	}
	h.recorded.Add(1)
	return nil
}

// end is deferred by each handler: a call whose samples were not all
// recorded is aborted.
func (h *callHook) end() {
	if h == nil || h.recording == nil || h.ended {
		return
	}
	h.ended = true
	if n := int(h.recorded.Load()); n < h.samples {
		h.recording.Abort(fmt.Errorf("the call ended with %d of %d samples recorded (refused, engine error or client gone)", n, h.samples))
	}
}

// turnMessage is t as the assistant message the client is told of; call
// ids are the dialect-free part (chat and Responses prefix "call_",
// Messages "toolu_").
func turnMessage(t turnResult) chat.Message {
	m := chat.Message{Role: chat.RoleAssistant, Content: t.content, ReasoningContent: t.reasoning}
	for _, c := range t.calls {
		m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: c.id, Type: "function", Function: chat.FunctionCall{Name: c.name, Arguments: c.arguments}})
	}
	return m
}
