package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentrl/agentrl/server"
)

// anthropicEvent is one streamed Messages event (MessageStreamEventUnion):
// which fields are set depends on Type.
type anthropicEvent struct {
	Type         string                `json:"type"`
	Message      *anthropicResponse    `json:"message,omitempty"`
	Index        *int                  `json:"index,omitempty"`
	ContentBlock *anthropicContent     `json:"content_block,omitempty"`
	Delta        any                   `json:"delta,omitempty"`
	Usage        *anthropicUsage       `json:"usage,omitempty"`
	Error        *anthropicErrorDetail `json:"error,omitempty"`
}

// anthropicBlockDelta is a content_block_delta's delta: text_delta,
// thinking_delta or input_json_delta.
type anthropicBlockDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

// anthropicStopDelta is message_delta's delta: both fields always sent,
// null when they do not apply (the SDK's Accumulate takes them as the
// final values).
type anthropicStopDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// anthropicEvents turns a streamed turn into the Messages event sequence
// as Anthropic sends it: message_start (the message with no content),
// ping, then per block content_block_start, its deltas (text_delta,
// thinking_delta; a tool call leaves whole as one input_json_delta) and
// content_block_stop, with indices from 0 and every block closed before
// the next opens; finally message_delta (stop_reason, stop_sequence and
// the whole usage) and message_stop. Accumulated (Message.Accumulate) it
// equals the non-streamed reply. It does no I/O: each method returns the
// frames to send.
type anthropicEvents struct {
	head    anthropicResponse
	started bool
	blocks  int    // blocks opened
	open    string // the open block's type ("text", "thinking"), "" when none
	text    bool   // a text block was opened
	frames  []sseFrame
	err     error // the first event that could not be encoded
}

func newAnthropicEvents(head anthropicResponse) *anthropicEvents {
	head.Content = []anthropicContent{}
	head.StopReason, head.StopSequence = nil, nil
	return &anthropicEvents{head: head}
}

func (e *anthropicEvents) emit(ev anthropicEvent) {
	b, err := json.Marshal(ev)
	if err != nil {
		if e.err == nil {
			e.err = fmt.Errorf("encoding a Messages event: %w", err)
		}
		return
	}
	e.frames = append(e.frames, sseFrame{name: ev.Type, data: b})
}

func (e *anthropicEvents) take() []sseFrame {
	f := e.frames
	e.frames = nil
	return f
}

func (e *anthropicEvents) begin() {
	if e.started {
		return
	}
	e.started = true
	m := e.head
	e.emit(anthropicEvent{Type: "message_start", Message: &m})
	e.emit(anthropicEvent{Type: "ping"})
}

// add takes a chunk's delta.
func (e *anthropicEvents) add(d turnDelta) []sseFrame {
	if !d.hasText() {
		return nil
	}
	e.begin()
	if d.reasoning != "" {
		e.addText("thinking", d.reasoning)
	}
	if d.content != "" {
		e.addText("text", d.content)
	}
	for _, c := range d.calls {
		e.closeBlock()
		e.call(c)
	}
	return e.take()
}

func (e *anthropicEvents) addText(kind, text string) {
	if e.open != kind {
		e.closeBlock()
		e.openBlock(kind)
	}
	d := anthropicBlockDelta{}
	if kind == "thinking" {
		d.Type, d.Thinking = "thinking_delta", &text
	} else {
		d.Type, d.Text = "text_delta", &text
	}
	e.emit(anthropicEvent{Type: "content_block_delta", Index: intp(e.blocks - 1), Delta: d})
}

func (e *anthropicEvents) openBlock(kind string) {
	block := anthropicTextBlock(kind, "")
	e.emit(anthropicEvent{Type: "content_block_start", Index: intp(e.blocks), ContentBlock: &block})
	e.blocks++
	e.open = kind
	e.text = e.text || kind == "text"
}

func (e *anthropicEvents) closeBlock() {
	if e.open == "" {
		return
	}
	e.open = ""
	e.emit(anthropicEvent{Type: "content_block_stop", Index: intp(e.blocks - 1)})
}

// call sends a tool_use block whole: its start with an empty input, the
// input as one input_json_delta, its stop.
func (e *anthropicEvents) call(c turnCall) {
	i := e.blocks
	e.blocks++
	block := anthropicToolUse(c, json.RawMessage("{}"))
	e.emit(anthropicEvent{Type: "content_block_start", Index: intp(i), ContentBlock: &block})
	args := string(anthropicInput(c.arguments))
	e.emit(anthropicEvent{Type: "content_block_delta", Index: intp(i), Delta: anthropicBlockDelta{Type: "input_json_delta", PartialJSON: &args}})
	e.emit(anthropicEvent{Type: "content_block_stop", Index: intp(i)})
}

// finish closes the turn: the open block, an empty text block when the
// turn had neither text nor calls (as anthropicContentOf answers, also
// after thinking), then message_delta and message_stop.
func (e *anthropicEvents) finish(t turnResult) []sseFrame {
	e.begin()
	if !e.text && len(t.calls) == 0 {
		e.closeBlock()
		e.openBlock("text")
	}
	e.closeBlock()
	reason, seq := anthropicStopReason(t)
	u := anthropicUsageOf(t.usage)
	e.emit(anthropicEvent{Type: "message_delta", Delta: anthropicStopDelta{StopReason: &reason, StopSequence: seq}, Usage: &u})
	e.emit(anthropicEvent{Type: "message_stop"})
	return e.take()
}

// fail ends a started stream with an error event, which the SDK turns
// into an API error.
func (e *anthropicEvents) fail(err error) []sseFrame {
	e.emit(anthropicEvent{Type: "error", Error: &anthropicErrorDetail{Type: anthropicErrorType(statusOf(err)), Message: err.Error()}})
	return e.take()
}

// streamMessages answers a streamed /v1/messages request: the one turn
// producer, through anthropicEvents. An engine that fails before anything
// was sent gets a plain HTTP error in Anthropic's shape; after, an error
// event.
func (s *Server) streamMessages(w http.ResponseWriter, r *http.Request, st server.Streamer, p preparedChat, head anthropicResponse) {
	s.streamDialect(w, r, st, p, newAnthropicEvents(head), writeAnthropicRequestError)
}
