package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentrl/agentrl/chat"
)

// ExtractAnswer finds the final numeric answer in a GSM8K-style solution.
//
// Strict mode takes the number after the last "#### " (the GSM8K answer
// convention); flexible mode takes the last number anywhere in the text. A
// number is an optional "-" followed by digits, "." and ","; commas are
// dropped ("1,234" is 1234), as are "$" after "#### " and trailing dots (the
// full stop in "is 42."). Candidates that are not a number after that (",",
// "1.2.3") are skipped. It returns the normalised spelling and whether one
// was found.
//
// Compared with verl's gsm8k.extract_solution: the same candidates in the
// same modes, but verl looks only at the last 300 characters, keeps commas
// and trailing dots in flexible mode, and compares answers as strings;
// here the whole text is searched and answers compare as numbers
// (ScoreAnswer), so "42.", "42.0" and "42" all match a ground truth of 42.
func ExtractAnswer(text string, strict bool) (string, bool) {
	if strict {
		for rest := text; ; {
			i := strings.LastIndex(rest, "#### ")
			if i < 0 {
				return "", false
			}
			tail := strings.TrimLeft(rest[i+5:], "$")
			if n, ok := normaliseNumber(leadingNumber(tail)); ok {
				return n, true
			}
			rest = rest[:i]
		}
	}
	for end := len(text); end > 0; {
		// Scan backwards for the last run of number characters.
		j := end
		for j > 0 && !isNumChar(text[j-1]) {
			j--
		}
		if j == 0 {
			return "", false
		}
		i := j
		for i > 0 && isNumChar(text[i-1]) {
			i--
		}
		cand := text[i:j]
		if i > 0 && text[i-1] == '-' {
			cand = "-" + cand
		}
		if n, ok := normaliseNumber(cand); ok {
			return n, true
		}
		end = i
	}
	return "", false
}

func isNumChar(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == ',' }

// leadingNumber returns the number characters at the start of s (with a sign).
func leadingNumber(s string) string {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	for i < len(s) && (isNumChar(s[i]) || s[i] == '$') {
		i++
	}
	return s[:i]
}

// normaliseNumber drops "," and "$" and trailing dots and checks that what
// is left is a decimal number.
func normaliseNumber(s string) (string, bool) {
	s = strings.NewReplacer(",", "", "$", "").Replace(s)
	s = strings.TrimRight(s, ".")
	if s == "" || s == "-" {
		return "", false
	}
	if _, ok := parseDecimal(s); !ok {
		return "", false
	}
	return s, true
}

func parseDecimal(s string) (*big.Rat, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || strings.Count(digits, ".") > 1 || strings.Trim(digits, "0123456789.") != "" || digits == "." {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// ScoreAnswer is 1 when answer and groundTruth are the same number (after
// the normalisation of ExtractAnswer: "1,000.0" equals "1000"), else 0.
func ScoreAnswer(answer, groundTruth string) float64 {
	a, ok1 := normaliseNumber(strings.TrimSpace(answer))
	g, ok2 := normaliseNumber(strings.TrimSpace(groundTruth))
	if !ok1 || !ok2 {
		return 0
	}
	ra, _ := parseDecimal(a)
	rg, _ := parseDecimal(g)
	if ra.Cmp(rg) == 0 {
		return 1
	}
	return 0
}

// ScoreText is the GSM8K rule on a whole text: the answer ExtractAnswer
// finds in it (strict: after the last "#### "; else the last number)
// scored against groundTruth by ScoreAnswer, and 0 when there is none.
// Every answer scorer of the module (reward functions, the GSM8K
// interaction, the arithmetic task) is this one.
func ScoreText(text, groundTruth string, strict bool) float64 {
	ans, ok := ExtractAnswer(text, strict)
	if !ok {
		return 0
	}
	return ScoreAnswer(ans, groundTruth)
}

// GSM8KPenalty is the step reward for an answer that does not improve on the
// previous one of the same trajectory (verl's Gsm8kTool uses -0.05).
const GSM8KPenalty = -0.05

// GSM8K is the answer-checking tool of verl's GSM8K multi-turn recipe: the
// model submits {"answer": "..."}, the tool scores it against the sample's
// ground truth (create kwarg "ground_truth") and replies with the parsed
// answer and its score. The step reward is 0 when the score improved on the
// trajectory's previous call's (as verl keeps it: the latest, not the best)
// and GSM8KPenalty otherwise; the score itself is in Metrics["score"].
type GSM8K struct{ answerTool }

// answerTool is the shape of verl's answer-checking tools (Gsm8kTool,
// Geo3kTool): an instance per trajectory holding the sample's ground truth
// (create kwarg "ground_truth"), Execute scoring {"answer": ...} with score
// and replying as verl's f-string does, a step reward of 0 when the score
// beat the previous call's and GSM8KPenalty otherwise (verl keeps the
// latest score, not the best).
type answerTool struct {
	name   string // "gsm8k", "geo3k": instance ids and errors
	schema chat.ToolSchema
	score  func(answer, groundTruth string) float64
	next   atomic.Int64
	inst   sync.Map // id → *gsm8kState
}

type gsm8kState struct {
	mu          sync.Mutex
	groundTruth string
	best        float64 // the previous call's score
}

// DefaultGSM8KSchema is the schema of verl's GSM8K example tool config.
var DefaultGSM8KSchema = chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
	Name:        "calc_gsm8k_reward",
	Description: "A tool for calculating the reward of gsm8k. (1.0 if parsed answer is correct, 0.0 if parsed answer is incorrect or not correctly parsed)",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","description":"The model's answer to the GSM8K math problem, must be a digits"}},"required":["answer"]}`),
}}

// NewGSM8K returns the checker with the given schema (a zero schema means
// DefaultGSM8KSchema). The schema must have a string property "answer".
func NewGSM8K(schema chat.ToolSchema) *GSM8K {
	if schema.Function.Name == "" {
		schema = DefaultGSM8KSchema
	}
	return &GSM8K{answerTool{name: "gsm8k", schema: schema, score: gsm8kScore}}
}

// gsm8kScore is verl's Gsm8kTool's score: the answer, prefixed with
// "#### " unless it has it, read by the flexible rule.
func gsm8kScore(answer, groundTruth string) float64 {
	if !strings.HasPrefix(answer, "#### ") {
		answer = "#### " + answer
	}
	if got, ok := ExtractAnswer(answer, false); ok {
		return ScoreAnswer(got, groundTruth)
	}
	return 0
}

// Schema implements Tool.
func (a *answerTool) Schema() chat.ToolSchema { return a.schema }

// Create needs kwargs["ground_truth"] (a string or a number).
func (a *answerTool) Create(_ context.Context, kwargs map[string]any) (string, error) {
	s, err := groundTruthKwarg(a.name, kwargs)
	if err != nil {
		return "", err
	}
	id := a.name + "-" + strconv.FormatInt(a.next.Add(1), 10)
	a.inst.Store(id, &gsm8kState{groundTruth: s})
	return id, nil
}

// Execute scores {"answer": ...}.
func (a *answerTool) Execute(_ context.Context, id string, args json.RawMessage) (Result, error) {
	v, ok := a.inst.Load(id)
	if !ok {
		return Result{}, fmt.Errorf("%s: unknown instance %q", a.name, id)
	}
	st := v.(*gsm8kState)
	answer, err := answerArg(a.name, args)
	if err != nil {
		return Result{}, err
	}
	score := a.score(answer, st.groundTruth)
	st.mu.Lock()
	step := GSM8KPenalty
	if score > st.best {
		step = 0
	}
	st.best = score
	st.mu.Unlock()
	return Result{
		Text:    fmt.Sprintf("Current parsed answer=%s reward=%s", pyRepr(answer), pyFloat(score)),
		Reward:  step,
		Metrics: map[string]float64{"score": score},
	}, nil
}

// Release implements Tool.
func (a *answerTool) Release(_ context.Context, id string) error {
	a.inst.Delete(id)
	return nil
}

// groundTruthKwarg reads create kwarg "ground_truth" (a string or a
// number) for the answer-checking tools.
func groundTruthKwarg(tool string, kwargs map[string]any) (string, error) {
	gt, ok := kwargs["ground_truth"]
	if !ok {
		return "", fmt.Errorf(`%s: create kwargs have no "ground_truth"`, tool)
	}
	switch v := gt.(type) {
	case string:
		return v, nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case json.Number:
		return v.String(), nil
	default:
		return "", fmt.Errorf(`%s: "ground_truth" must be a string or a number, got %T`, tool, gt)
	}
}

// answerArg reads {"answer": ...}: a string as it is, another JSON value
// in its JSON spelling (verl's tools take str() of it), none as "".
func answerArg(tool string, args json.RawMessage) (string, error) {
	var a struct {
		Answer any `json:"answer"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	switch x := a.Answer.(type) {
	case string:
		return x, nil
	case nil:
		return "", nil
	default:
		b, _ := json.Marshal(x)
		return string(b), nil
	}
}

// pyRepr quotes s the way Python's repr does for ordinary text, so the
// reply reads like verl's.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
