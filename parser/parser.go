package parser

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentrl/agentrl/chat"
)

// Options tune a Parser.
type Options struct {
	// ThinkAware makes the parser ignore tool calls written inside
	// <think>…</think> and return that text as Result.Reasoning, several
	// blocks joined by "\n". A "</think>" with no "<think>" before it ends a
	// block that began in the prompt (Qwen3 thinking templates end the
	// generation prompt with "<think>\n"), so everything before it is
	// reasoning; a "<think>" never closed makes the rest of the turn
	// reasoning (a turn cut off while thinking has no calls).
	ThinkAware bool
	// Tools, when set, lists the tools the model may call: a call to any
	// other name is returned as a ParseError, and qwen3_coder converts
	// parameter values by the types in each tool's JSON Schema.
	Tools []chat.ToolSchema
}

// ParseError is one malformed tool call. Message is short and meant to be
// shown to the model so that it can fix the call on its next turn.
type ParseError struct {
	Message string
}

func (e ParseError) Error() string { return e.Message }

// Result is what a Parser makes of one assistant turn.
type Result struct {
	// Content is the text outside tool calls (and outside reasoning when
	// ThinkAware): the pieces before, between and after the calls,
	// concatenated and trimmed of surrounding white space.
	Content string
	// Reasoning is the text of the reasoning blocks (see Options.ThinkAware;
	// gpt_oss always fills it from the analysis channel), trimmed.
	Reasoning string
	// Calls are the well-formed tool calls in the order written, with
	// Type "function" and no ID (the agent loop assigns ids).
	// Function.Arguments is a JSON object: the exact text the model wrote
	// for JSON formats, the JSON a peer's parser builds for the XML and
	// Python formats (qwen3_coder, glm45, deepseek_v32, pythonic), and a
	// JSON string for a gpt_oss tool that takes plain text.
	Calls []chat.ToolCall
	// Errors are the malformed calls, in the order written.
	Errors []ParseError
}

// HasCalls reports whether the turn tried to call tools: it has calls or
// malformed calls, which an agent loop answers with observations.
func (r Result) HasCalls() bool { return len(r.Calls) > 0 || len(r.Errors) > 0 }

// Parser turns one assistant turn into content, reasoning and tool calls.
// text must be decoded with special tokens kept: the formats' markers
// (<tool_call>, <|python_tag|>, <｜tool▁call▁begin｜>, <|channel|>, …) are
// special tokens in their models' vocabularies. ids are the turn's token
// ids; every current format is fully determined by the text, so ids may be
// nil. Parse never panics and runs in time linear in len(text). A Parser
// is safe for concurrent use.
type Parser interface {
	Parse(text string, ids []int32) Result
}

// A format parses the text that is left once reasoning has been split off.
type format interface {
	parse(text string, r *Result, v *validator)
}

var formats = map[string]func() format{
	"hermes":       func() format { return hermes{} },
	"qwen3_coder":  func() format { return qwen3Coder{} },
	"llama3_json":  func() format { return llama3JSON{} },
	"deepseek_v3":  func() format { return deepseekV3{} },
	"gpt_oss":      func() format { return gptOSS{} },
	"deepseek_v31": func() format { return deepseekV31{} },
	"kimi_k2":      func() format { return kimiK2{} },
	"glm45":        func() format { return glm45{} },
	"pythonic":     func() format { return pythonic{} },
	"mistral":      func() format { return mistral{} },
	"deepseek_v32": func() format { return deepseekV32{} },
	"deepseek_v4":  func() format { return deepseekV4{} },
	"deepseek_v41": func() format { return deepseekV41{} },
	"minimax_m2":   func() format { return minimaxM2{} },
	"seed_oss":     func() format { return seedOSS{} },
	"gemma4":       func() format { return gemma4{} },
	"kimi_k3":      func() format { return kimiK3{} },
}

// aliases maps other spellings of the format names to them: verl's
// multi_turn.format values, and the tool-call-parser names of vLLM and
// SGLang for the same formats, so that a config written for either
// serving stack works unchanged.
var aliases = map[string]string{
	"gpt-oss":         "gpt_oss",      // verl's multi_turn.format, SGLang
	"openai":          "gpt_oss",      // vLLM's harmony parser
	"qwen":            "hermes",       // SGLang
	"qwen25":          "hermes",       // SGLang
	"qwen3_xml":       "qwen3_coder",  // vLLM's second parser of the same format
	"llama3":          "llama3_json",  // SGLang
	"llama4_json":     "llama3_json",  // vLLM (the same parser)
	"deepseekv3":      "deepseek_v3",  // SGLang
	"deepseekv31":     "deepseek_v31", // SGLang
	"glm4_moe":        "glm45",        // vLLM
	"glm":             "glm45",        // SGLang
	"glm46":           "glm45",
	"glm47":           "glm45", // vLLM, SGLang: GLM-4.7 and GLM-5 write the same calls without the newlines
	"kimik2":          "kimi_k2",
	"llama4_pythonic": "pythonic",     // vLLM
	"qwen35_coder":    "qwen3_coder",  // vLLM's Qwen3.5 parser: Qwen3CoderToolParser with its own streaming
	"step3p5":         "qwen3_coder",  // vLLM's Step-3.5 parser reads the same XML; SGLang maps it to Qwen3CoderDetector
	"minimax-m2":      "minimax_m2",   // SGLang
	"seed":            "seed_oss",     // verl's tool parser for Seed-OSS
	"minimax":         "minimax_m2",   // verl's tool parser for MiniMax's XML
	"deepseekv4":      "deepseek_v4",  // SGLang
	"deepseekv41":     "deepseek_v41", // SGLang
}

// stopMarkers are the formats' markers after which generation must stop.
var stopMarkers = map[string][]string{
	"gemma4": {gemmaCallEnd},
}

// StopMarkers returns the special tokens after which the engine must stop
// generating for format's calls to be read (format may be an alias):
// Gemma 4 closes a call with <tool_call|> and goes on generating instead
// of ending its turn, so verl's Gemma4 tool parser stops on that token
// (ToolParser.stop_token_ids). The other formats end their turn with the
// model's end-of-turn token and have none.
func StopMarkers(format string) []string {
	if canon, ok := aliases[format]; ok {
		format = canon
	}
	return append([]string(nil), stopMarkers[format]...)
}

// Aliases returns the other accepted spellings of the format names, each
// mapped to its format.
func Aliases() map[string]string {
	out := make(map[string]string, len(aliases))
	for a, f := range aliases {
		out[a] = f
	}
	return out
}

// Formats returns the known format names, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrUnknownFormat is wrapped by New's error for a format name it does not
// know.
var ErrUnknownFormat = errors.New("parser: unknown format")

// New returns the parser for format (one of Formats(), or one of the
// spellings in Aliases()). It fails on an
// unknown format (wrapping ErrUnknownFormat) and on tool schemas that
// cannot be used (no name, a duplicate name, parameters that are not a
// JSON object).
func New(format string, opts Options) (Parser, error) {
	if canon, ok := aliases[format]; ok {
		format = canon
	}
	f, ok := formats[format]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownFormat, format, strings.Join(Formats(), ", "))
	}
	v, err := newValidator(opts.Tools)
	if err != nil {
		return nil, err
	}
	p := &parser{f: f(), think: opts.ThinkAware && format != "gpt_oss", v: v, thinkOpen: thinkOpen, thinkClose: thinkClose}
	if tags, ok := thinkTags[format]; ok {
		p.thinkOpen, p.thinkClose = tags[0], tags[1]
	}
	return p, nil
}

// thinkTags are the reasoning tags of the formats whose models do not
// write <think>…</think>.
var thinkTags = map[string][2]string{
	"seed_oss": {seedThinkOpen, seedThinkClose},
	"gemma4":   {gemmaThinkOpen, gemmaThinkEnd},
	"kimi_k3":  {k3ThinkOpen, k3ThinkClose},
}

type parser struct {
	f                     format
	think                 bool
	thinkOpen, thinkClose string
	v                     *validator
}

func (p *parser) Parse(text string, _ []int32) Result {
	var r Result
	if p.think {
		var reasoning string
		text, reasoning = splitThinkTags(text, p.thinkOpen, p.thinkClose)
		r.Reasoning = reasoning
	}
	p.f.parse(text, &r, p.v)
	r.Content = strings.TrimSpace(r.Content)
	r.Reasoning = strings.TrimSpace(r.Reasoning)
	return r
}

// validator checks calls against the tool list given in Options.
type validator struct {
	tools     map[string]*toolInfo // nil: any name is accepted
	available string               // tool names for error messages
}

type toolInfo struct {
	// props maps parameter name → its type as read by paramType (what
	// vLLM's qwen3_coder parser branches on).
	props map[string]paramType
	// hasProps is false when the schema had no usable parameter list, in
	// which case every value stays a string.
	hasProps bool
	// plainText is set for a tool whose parameters schema has a "type"
	// other than "object" (harmony's built-in python takes code): gpt_oss
	// passes its message body on as a JSON string instead of parsing it.
	plainText bool
}

func newValidator(tools []chat.ToolSchema) (*validator, error) {
	if len(tools) == 0 {
		return &validator{}, nil
	}
	v := &validator{tools: make(map[string]*toolInfo, len(tools))}
	for i, t := range tools {
		name := t.Function.Name
		if name == "" {
			return nil, fmt.Errorf("parser: tool %d has no name", i)
		}
		if _, dup := v.tools[name]; dup {
			return nil, fmt.Errorf("parser: tool %q listed twice", name)
		}
		info, err := newToolInfo(t.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("parser: tool %q: %w", name, err)
		}
		v.tools[name] = info
	}
	names := v.names()
	// The message goes to the model: a long tool list is cut short.
	const maxListed = 20
	if len(names) > maxListed {
		v.available = strings.Join(names[:maxListed], ", ") + fmt.Sprintf(", … (%d more)", len(names)-maxListed)
	} else {
		v.available = strings.Join(names, ", ")
	}
	return v, nil
}

// check validates one call. args must be the raw JSON text of the
// arguments; which says where the call was (e.g. "tool call 2") for the
// error message.
func (v *validator) check(r *Result, which, name, args string) {
	if !v.nameOK(r, which, name) {
		return
	}
	if trimmed := strings.TrimSpace(args); !json.Valid([]byte(trimmed)) {
		r.addError("%s to %q: arguments are not valid JSON: %s", which, name, snippet(trimmed))
		return
	}
	v.addCall(r, which, name, args)
}

// accept is check for arguments already known to be one valid JSON value
// (a value cut out of a validated document).
func (v *validator) accept(r *Result, which, name, args string) {
	if v.nameOK(r, which, name) {
		v.addCall(r, which, name, args)
	}
}

// plainText reports whether the named tool takes plain text rather than a
// JSON object (see toolInfo.plainText).
func (v *validator) plainText(name string) bool {
	return v.tools != nil && v.tools[name] != nil && v.tools[name].plainText
}

// acceptText adds a call whose arguments are text as one JSON string.
func (v *validator) acceptText(r *Result, which, name, text string) {
	if v.nameOK(r, which, name) {
		r.Calls = append(r.Calls, chat.ToolCall{Type: "function", Function: chat.FunctionCall{Name: name, Arguments: strconvQuote(text)}})
	}
}

func (v *validator) nameOK(r *Result, which, name string) bool {
	if name == "" {
		r.addError("%s: missing function name", which)
		return false
	}
	if v.tools != nil && v.tools[name] == nil {
		r.addError("%s: unknown tool %q (available: %s)", which, name, v.available)
		return false
	}
	return true
}

func (v *validator) addCall(r *Result, which, name, args string) {
	if trimmed := strings.TrimSpace(args); trimmed == "" || trimmed[0] != '{' {
		r.addError("%s to %q: arguments must be a JSON object, got %s", which, name, snippet(trimmed))
		return
	}
	r.Calls = append(r.Calls, chat.ToolCall{Type: "function", Function: chat.FunctionCall{Name: name, Arguments: args}})
}

func (v *validator) names() []string {
	names := make([]string, 0, len(v.tools))
	for n := range v.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *Result) addError(format string, args ...any) {
	r.Errors = append(r.Errors, ParseError{Message: fmt.Sprintf(format, args...)})
}

func (r *Result) ordinal() string {
	return fmt.Sprintf("tool call %d", len(r.Calls)+len(r.Errors)+1)
}

// snippet quotes the start of s for an error message; model output can be
// long and the message should stay short.
func snippet(s string) string {
	// max bounds the bytes quoted, maxQuoted the quoted form: a byte that is
	// not UTF-8 is quoted as the 6 bytes of "\ufffd", so 60 such bytes would
	// make a 360-byte snippet and a long run of bad calls an error list
	// several times the input's size (FuzzGemma4 found it).
	const max, maxQuoted = 60, 80
	cut := min(len(s), max)
	for {
		for cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut--
		}
		q := strconvQuote(s[:cut])
		if len(q) <= maxQuoted || cut == 0 {
			if cut < len(s) {
				q += "…"
			}
			return q
		}
		cut /= 2
	}
}

func strconvQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
