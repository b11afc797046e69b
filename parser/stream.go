package parser

import (
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/chat"
)

// Update is what one Stream.Feed (or Stream.Close) adds to a streamed
// turn: more content and reasoning text, and the tool calls and errors
// that became final. Concatenating every Update's Content (Reasoning)
// gives the final Result's Content (Reasoning); appending every Update's
// Calls (Errors) gives its Calls (Errors), in order. Errors come only with
// Close.
type Update struct {
	Content   string
	Reasoning string
	Calls     []chat.ToolCall
	Errors    []ParseError
}

// Stream parses one assistant turn while it is generated: feed it the
// text as it is decoded, and each Feed returns the content, reasoning and
// calls that can no longer change. Close returns the rest (and all the
// errors: an error's message describes the text up to the end, so errors
// are only final then) and the Result, which is exactly Parse of the
// whole text.
//
// Something is emitted once it is the same in the parse of the text so
// far and in the parses of that text followed by each of a set of
// continuations that would change an unfinished piece (a closing quote,
// bracket or tag of any format, an end-of-turn marker, "</think>"): a
// call still being written, or text that could still turn out to be part
// of a call, is held back. The text is re-parsed when it has grown by a
// fraction of its length, or when a delta holds a character that ends
// a marker, so that the total work stays linear in the length of the
// turn (a constant factor over one Parse). A Stream is not safe for
// concurrent use.
type Stream struct {
	p       *parser
	markers []string
	text    strings.Builder
	parsed  int // len(text) at the last re-parse

	sentContent, sentReasoning int // bytes of the final Content/Reasoning emitted
	sentCalls                  int
	closed                     bool
}

// NewStream returns a Stream for format and opts, as New does for Parse.
func NewStream(format string, opts Options) (*Stream, error) {
	p, err := New(format, opts)
	if err != nil {
		return nil, err
	}
	if canon, ok := aliases[format]; ok {
		format = canon
	}
	return &Stream{p: p.(*parser), markers: formatMarkers[format]}, nil
}

// streamProbes are the continuations an emitted piece must survive,
// beside the format's own markers (formatMarkers): each closes or opens
// something; a piece that is the same after every one of them is
// complete.
var streamProbes = []string{"\n", `"`, `'`, "}", "]", ")", "\\", thinkClose, thinkOpen}

// formatMarkers are each format's markers: appended whole as probes, and
// completed when the text ends with a proper prefix of one. The extra
// entries are whole calls, which turn text that may start a call into
// one.
var formatMarkers = map[string][]string{
	"hermes":       {hermesOpen, hermesClose, "<|im_end|>", "<|endoftext|>"},
	"qwen3_coder":  {hermesOpen, hermesClose, qcFuncOpen + "x>", qcFuncClose, qcParamOpen + "x>", qcParamClose, "<|im_end|>", "<|endoftext|>"},
	"llama3_json":  {llamaPythonTag, llamaEOT, llamaEOM, `{"name": "x", "parameters": {}}`},
	"deepseek_v3":  {dsCallsBegin, dsCallsEnd, dsCallBegin, dsCallEnd, dsSep, dsEOS},
	"deepseek_v31": {dsCallsBegin, dsCallsEnd, dsCallBegin, dsCallEnd, dsSep, dsEOS},
	"deepseek_v32": {dsmlCalls, dsmlCallsEnd, dsmlToolCalls, dsmlToolCallsEd, dsmlInvoke + `x">`, dsmlInvokeEnd, dsmlParam + `x" string="true">`, dsmlParamEnd, dsEOS, dsml41Calls},
	"deepseek_v4":  {dsmlToolCalls, dsmlToolCallsEd, dsmlInvoke + `x">`, dsmlInvokeEnd, dsmlParam + `x" string="true">`, dsmlParamEnd, dsEOS, dsmlCalls, dsml41Calls},
	"deepseek_v41": {dsml41Calls, dsml41CallsEnd, dsml41Invoke + `x">`, dsml41InvokeEnd, dsml41Param + `x" string="true">`, dsml41ParamEnd, dsEOS, dsmlCalls, dsmlToolCalls},
	"minimax_m2":   {minimaxCalls, minimaxCallsEnd, minimaxInvoke + `x">`, minimaxInvokeEnd, minimaxParam + `x">`, minimaxParamEnd, minimaxEOT},
	"seed_oss":     {seedCalls, seedCallsEnd, qcFuncOpen + "x>", qcFuncClose, qcParamOpen + "x>", qcParamClose, seedThinkOpen, seedThinkClose, seedEOS},
	"gemma4":       {gemmaCall, gemmaCallEnd, gemmaQuote, gemmaTurnEnd, gemmaThinkOpen, gemmaThinkEnd, gemmaCall + "call:x{}" + gemmaCallEnd},
	"kimi_k3":      {k3ThinkOpen, k3ThinkClose, k3ResponseOpen, k3ResponseClose, k3ToolsOpen, k3ToolsClose, k3MessageClose, k3EndOfMsg, k3CallOpen + ` tool="x"` + k3Sep, k3CallClose, k3ArgOpen + ` key="x" type="string"` + k3Sep, k3ArgClose, k3Sep},
	"kimi_k2":      {kimiSectionBegin, kimiSectionEnd, kimiSectionBeginAlt, kimiSectionEndAlt, kimiCallBegin, kimiArgBegin, kimiCallEnd, kimiIMEnd},
	"glm45":        {hermesOpen, hermesClose, glmArgKey, glmArgKeyEnd, glmArgValue, glmArgValueEnd, "<|user|>", "<|endoftext|>", "<|observation|>"},
	"gpt_oss":      {hStart, hChannel, hMessage, hConstrain, hEnd, hCall, hReturn},
	"mistral":      {mistralCalls, mistralArgs, mistralCallID, "</s>"},
	"pythonic":     {pyStartTag, pyEndTag, "<|eot_id|>", "<|eom_id|>", "<|eot|>", "<|eom|>", "[x(a=1)]"},
}

// Feed adds the next piece of generated text and returns what became
// final. It fails after Close.
func (s *Stream) Feed(delta string) (Update, error) {
	if s.closed {
		return Update{}, fmt.Errorf("parser: Feed after Close")
	}
	s.text.WriteString(delta)
	n := s.text.Len()
	grown := n - s.parsed
	// Re-parse when the text grew by an eighth, or when the delta may
	// have finished a marker and the text grew by a 32nd: geometric
	// steps keep the total work linear.
	if grown == 0 || (grown*8 < n && !(strings.ContainsAny(delta, ">|]})\n\"'") && grown*32 >= n)) {
		return Update{}, nil
	}
	s.parsed = n
	return s.stable(s.text.String()), nil
}

// Close ends the turn: it returns the rest of the updates and the Result,
// which equals Parse of all the text fed.
func (s *Stream) Close() (Update, Result) {
	s.closed = true
	final := s.p.Parse(s.text.String(), nil)
	u := Update{
		Content:   tail(final.Content, s.sentContent),
		Reasoning: tail(final.Reasoning, s.sentReasoning),
	}
	if s.sentCalls < len(final.Calls) {
		u.Calls = final.Calls[s.sentCalls:]
	}
	u.Errors = final.Errors
	s.sentContent, s.sentReasoning = len(final.Content), len(final.Reasoning)
	s.sentCalls = len(final.Calls)
	return u, final
}

func tail(s string, from int) string {
	if from >= len(s) {
		return ""
	}
	return s[from:]
}

// stable parses text under every probe and emits what they agree on.
func (s *Stream) stable(text string) Update {
	base := s.p.Parse(text, nil)
	content, reasoning := base.Content, base.Reasoning
	calls := len(base.Calls)
	agree := func(r Result) {
		content = commonPrefix(content, r.Content)
		reasoning = commonPrefix(reasoning, r.Reasoning)
		calls = min(calls, sameCalls(base.Calls, r.Calls))
	}
	for _, probe := range streamProbes {
		agree(s.p.Parse(text+probe, nil))
	}
	for _, probe := range s.markers {
		agree(s.p.Parse(text+probe, nil))
	}
	for _, probe := range markerCompletions(text, s.markers) {
		agree(s.p.Parse(text+probe, nil))
	}
	// Text from an unclosed bracket on may become a call (llama3_json,
	// mistral, pythonic write calls as bare JSON or Python): the parse
	// of the text before it is one more view that must agree.
	if cut := openCut(text); cut < len(text) {
		agree(s.p.Parse(text[:cut], nil))
	}
	// Content is trimmed at the end of the turn: trailing white space
	// waits until text follows it.
	content = strings.TrimRight(content, " \t\r\n")
	reasoning = strings.TrimRight(reasoning, " \t\r\n")
	var u Update
	if len(content) > s.sentContent {
		u.Content = content[s.sentContent:]
		s.sentContent = len(content)
	}
	if len(reasoning) > s.sentReasoning {
		u.Reasoning = reasoning[s.sentReasoning:]
		s.sentReasoning = len(reasoning)
	}
	if calls > s.sentCalls {
		u.Calls = base.Calls[s.sentCalls:calls]
		s.sentCalls = calls
	}
	return u
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// sameCalls returns how many leading calls a and b share.
func sameCalls(a, b []chat.ToolCall) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i].Function.Name != b[i].Function.Name || a[i].Function.Arguments != b[i].Function.Arguments {
			return i
		}
	}
	return n
}

// markerCompletions returns, for each marker the text ends with a proper
// prefix of, the rest of that marker.
func markerCompletions(text string, markers []string) []string {
	var out []string
	// gpt_oss: a turn may begin by finishing the prompt's header with
	// " to=functions.NAME".
	if t := strings.TrimLeft(text, " "); len(t) < 3 && strings.HasPrefix("to=", t) {
		out = append(out, "to="[len(t):]+"functions.x<|channel|>commentary<|message|>{}<|call|>")
	}
	for _, m := range append([]string{thinkOpen, thinkClose}, markers...) {
		for k := len(m) - 1; k > 0; k-- {
			if strings.HasSuffix(text, m[:k]) {
				out = append(out, m[k:])
				break
			}
		}
	}
	return out
}

// openCut returns the position of the outermost bracket ({, [ or ( ) that
// is still open at the end of text, or len(text). Strings are skipped
// twice over: once taking only double quotes as quotes (JSON), once
// taking double and single quotes (Python); the earlier cut wins.
func openCut(text string) int {
	return min(openCutQuotes(text, `"`), openCutQuotes(text, `"'`))
}

func openCutQuotes(text, quotes string) int {
	var stack []int
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case strings.IndexByte(quotes, c) >= 0:
			quote = c
		case c == '{' || c == '[' || c == '(':
			stack = append(stack, i)
		case c == '}' || c == ']' || c == ')':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if len(stack) > 0 {
		return stack[0]
	}
	return len(text)
}
