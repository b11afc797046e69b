package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentrl/agentrl/server"
)

// sseFrame is one server-sent event: its name ("event:") and data.
type sseFrame struct {
	name string
	data []byte
}

// responsesEvent is one streamed Responses event
// (responses.ResponseStreamEventUnion): which fields are set depends on
// Type. None has a top-level "error" key: openai-go fails a stream on one,
// and errors go out as response.failed.
type responsesEvent struct {
	Type           string               `json:"type"`
	SequenceNumber int                  `json:"sequence_number"`
	Response       *responsesResponse   `json:"response,omitempty"`
	OutputIndex    *int                 `json:"output_index,omitempty"`
	Item           *responsesOutputItem `json:"item,omitempty"`
	ItemID         string               `json:"item_id,omitempty"`
	ContentIndex   *int                 `json:"content_index,omitempty"`
	Part           *responsesPart       `json:"part,omitempty"`
	Delta          *string              `json:"delta,omitempty"`
	Text           *string              `json:"text,omitempty"`
	Arguments      *string              `json:"arguments,omitempty"`
	Name           string               `json:"name,omitempty"`
	Logprobs       *[]chatLogprobEntry  `json:"logprobs,omitempty"`
}

// responsesEvents turns a streamed turn into the Responses event sequence
// as OpenAI sends it: response.created and response.in_progress; per
// output item response.output_item.added, then for text its
// content_part.added, the deltas (output_text or reasoning_text), their
// .done, content_part.done, and for a call function_call_arguments.delta
// and .done (a call leaves whole); response.output_item.done; finally
// response.completed (or .incomplete) with the whole response, equal to
// the non-streamed reply. Events are numbered from 0. It does no I/O:
// each method returns the frames to send.
type responsesEvents struct {
	resp    responsesResponse // the head, then the output as streamed
	seq     int
	started bool
	open    int // index in resp.Output of the open text item, -1 when none
	text    strings.Builder
	message bool // a message item was sent
	frames  []sseFrame
	err     error // the first event that could not be encoded

	// With include message.output_text.logprobs, lp gives the tokens'
	// entries (nil otherwise): pending are those not yet sent with an
	// output_text delta, all every one so far, which the finished
	// message's part carries (as the non-streamed reply does).
	lp      func(ids []int32, lps []float32, tops [][]server.TopLogprob) (*chatChoiceLogprobs, error)
	pending []chatLogprobEntry
	all     []chatLogprobEntry
	msg     int // index in resp.Output of the message item, -1 when none
}

func newResponsesEvents(head responsesResponse) *responsesEvents {
	head.Output = []responsesOutputItem{}
	return &responsesEvents{resp: head, open: -1, msg: -1}
}

func (e *responsesEvents) emit(ev responsesEvent) {
	ev.SequenceNumber = e.seq
	e.seq++
	b, err := json.Marshal(ev)
	if err != nil {
		// Only strings, numbers and raw JSON that decoding validated: kept
		// for the caller rather than sent half-written.
		if e.err == nil {
			e.err = fmt.Errorf("encoding a Responses event: %w", err)
		}
		return
	}
	e.frames = append(e.frames, sseFrame{name: ev.Type, data: b})
}

func (e *responsesEvents) take() []sseFrame {
	f := e.frames
	e.frames = nil
	return f
}

// snapshot is the response as it stands, for the events that carry it.
func (e *responsesEvents) snapshot() *responsesResponse {
	r := e.resp
	r.Output = append([]responsesOutputItem{}, e.resp.Output...)
	return &r
}

func (e *responsesEvents) begin() {
	if e.started {
		return
	}
	e.started = true
	e.resp.Status = "in_progress"
	e.emit(responsesEvent{Type: "response.created", Response: e.snapshot()})
	e.emit(responsesEvent{Type: "response.in_progress", Response: e.snapshot()})
}

func intp(i int) *int { return &i }

// add takes a chunk's delta.
func (e *responsesEvents) add(d turnDelta) []sseFrame {
	if e.lp != nil && len(d.ids) > 0 {
		l, err := e.lp(d.ids, d.lps, d.tops)
		if err != nil && e.err == nil {
			e.err = err
		}
		if l != nil {
			e.pending = append(e.pending, l.Content...)
			e.all = append(e.all, l.Content...)
		}
	}
	if !d.hasText() {
		return nil
	}
	e.begin()
	if d.reasoning != "" {
		e.addText("reasoning", d.reasoning)
	}
	if d.content != "" {
		e.addText("message", d.content)
	}
	for _, c := range d.calls {
		e.closeText()
		e.call(c)
	}
	return e.take()
}

// addText appends text to the open item of kind, opening it (and closing
// another) first.
func (e *responsesEvents) addText(kind, text string) {
	if e.open < 0 || e.resp.Output[e.open].Type != kind {
		e.closeText()
		e.openText(kind)
	}
	e.text.WriteString(text)
	item := e.resp.Output[e.open]
	ev := responsesEvent{OutputIndex: intp(e.open), ItemID: item.ID, ContentIndex: intp(0), Delta: &text}
	if kind == "message" {
		sent := append([]chatLogprobEntry{}, e.pending...)
		e.pending = e.pending[:0]
		ev.Type, ev.Logprobs = "response.output_text.delta", &sent
	} else {
		ev.Type = "response.reasoning_text.delta"
	}
	e.emit(ev)
}

func (e *responsesEvents) openText(kind string) {
	var item responsesOutputItem
	var part responsesPart
	if kind == "message" {
		item = responsesMessageItem("", "in_progress")
		part = outputText("")
		e.message = true
		e.msg = len(e.resp.Output)
	} else {
		item = responsesReasoningItem("")
		part = responsesPart{Type: "reasoning_text"}
	}
	item.Content = &[]responsesPart{}
	e.open = len(e.resp.Output)
	e.resp.Output = append(e.resp.Output, item)
	e.text.Reset()
	e.emit(responsesEvent{Type: "response.output_item.added", OutputIndex: intp(e.open), Item: &item})
	e.emit(responsesEvent{Type: "response.content_part.added", OutputIndex: intp(e.open), ItemID: item.ID, ContentIndex: intp(0), Part: &part})
}

func (e *responsesEvents) closeText() {
	if e.open < 0 {
		return
	}
	i := e.open
	e.open = -1
	item := e.resp.Output[i]
	text := e.text.String()
	var part responsesPart
	ev := responsesEvent{OutputIndex: intp(i), ItemID: item.ID, ContentIndex: intp(0), Text: &text}
	if item.Type == "message" {
		part = outputText(text)
		lps := append([]chatLogprobEntry{}, e.all...)
		part.Logprobs = &lps
		ev.Type, ev.Logprobs = "response.output_text.done", &lps
		item.Status = "completed"
	} else {
		part = responsesPart{Type: "reasoning_text", Text: text}
		ev.Type = "response.reasoning_text.done"
	}
	item.Content = &[]responsesPart{part}
	e.resp.Output[i] = item
	e.emit(ev)
	e.emit(responsesEvent{Type: "response.content_part.done", OutputIndex: intp(i), ItemID: item.ID, ContentIndex: intp(0), Part: &part})
	e.emit(responsesEvent{Type: "response.output_item.done", OutputIndex: intp(i), Item: &item})
}

func (e *responsesEvents) call(c turnCall) {
	i := len(e.resp.Output)
	item := responsesCallItem(c, "in_progress", e.resp.ns)
	empty := ""
	item.Arguments = &empty
	e.resp.Output = append(e.resp.Output, item)
	e.emit(responsesEvent{Type: "response.output_item.added", OutputIndex: intp(i), Item: &item})
	args := c.arguments
	e.emit(responsesEvent{Type: "response.function_call_arguments.delta", OutputIndex: intp(i), ItemID: item.ID, Delta: &args})
	e.emit(responsesEvent{Type: "response.function_call_arguments.done", OutputIndex: intp(i), ItemID: item.ID, Arguments: &args, Name: item.Name})
	done := responsesCallItem(c, "completed", e.resp.ns)
	done.ID = item.ID
	e.resp.Output[i] = done
	e.emit(responsesEvent{Type: "response.output_item.done", OutputIndex: intp(i), Item: &done})
}

// finish closes the turn: the open item, an empty message when the turn
// has neither text nor calls (as responsesOutput answers), then
// response.completed or response.incomplete.
func (e *responsesEvents) finish(t turnResult) []sseFrame {
	e.begin()
	e.closeText()
	if !e.message && len(t.calls) == 0 {
		e.openText("message")
		e.closeText()
	}
	if e.lp != nil && e.msg >= 0 {
		// Tokens after the message closed (its calls'): the finished
		// response's message has every token's, as the non-streamed one.
		setMessageLogprobs(e.resp.Output, e.all)
	}
	responsesStatus(&e.resp, t)
	typ := "response.completed"
	if e.resp.Status == "incomplete" {
		typ = "response.incomplete"
	}
	e.emit(responsesEvent{Type: typ, Response: e.snapshot()})
	return e.take()
}

// fail ends a started stream with response.failed.
func (e *responsesEvents) fail(err error) []sseFrame {
	e.begin()
	e.resp.Status = "failed"
	e.resp.Error = &responsesError{Code: "server_error", Message: err.Error()}
	e.emit(responsesEvent{Type: "response.failed", Response: e.snapshot()})
	return e.take()
}

// writeFrames sends frames as named events.
func writeFrames(sse *sseStream, frames []sseFrame) error {
	for _, f := range frames {
		if err := sse.named(f.name, f.data); err != nil {
			return fmt.Errorf("%w: %w", errClientGone, err)
		}
	}
	return nil
}

// streamResponses answers a streamed /v1/responses request: the one turn
// producer, through responsesEvents. An engine that fails before anything
// was sent gets a plain HTTP error; after, response.failed. No [DONE].
func (s *Server) streamResponses(w http.ResponseWriter, r *http.Request, st server.Streamer, p preparedChat, head responsesResponse) {
	ev := newResponsesEvents(head)
	if p.logprobs {
		ev.lp = s.chatLogprobEntries
	}
	s.streamDialect(w, r, st, p, ev, writeEngineError)
}

// dialectEvents turns the one turn producer's deltas into a dialect's
// events (responsesEvents, anthropicEvents); failed is the first encoding
// error, which ends the stream.
type dialectEvents interface {
	add(turnDelta) []sseFrame
	finish(turnResult) []sseFrame
	fail(error) []sseFrame
	failed() error
}

func (e *responsesEvents) failed() error { return e.err }
func (e *anthropicEvents) failed() error { return e.err }

// streamDialect runs a streamed conversation turn through ev. The record is
// durable before the turn's last tokens and final event are sent; an error
// before anything was sent is an HTTP error written by fail, after it the
// dialect's error event.
func (s *Server) streamDialect(w http.ResponseWriter, r *http.Request, st server.Streamer, p preparedChat, ev dialectEvents,
	fail func(http.ResponseWriter, error)) {
	if err := s.checkParser(p); err != nil {
		fail(w, err)
		return
	}
	sse := newSSEStream(w)
	send := func(frames []sseFrame) error {
		if err := ev.failed(); err != nil {
			return err
		}
		return writeFrames(sse, frames)
	}
	last, turn, out, err := s.newTurnStream(&p).run(r.Context(), st, p.req, func(d turnDelta) error {
		return send(ev.add(d))
	})
	if err == nil {
		err = p.hook.record(0, out, turn)
	}
	if err == nil {
		if err = send(ev.add(last)); err == nil {
			err = send(ev.finish(turn))
		}
	}
	if err == nil || errors.Is(err, errClientGone) {
		return
	}
	if !sse.started {
		fail(w, err)
		return
	}
	_ = writeFrames(sse, ev.fail(err))
}
