package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tool/internal/mathgrade"
)

// Geo3K is verl's Geo3kTool (the geometry answer checker of verl's geo3k
// multi-turn recipe, whose prompts carry the figure as an image): the model
// submits {"answer": "..."}, the tool grades it against the sample's ground
// truth (create kwarg "ground_truth") with mathruler's grade_answer, as
// verl's geo3k.compute_score(answer, ground_truth, use_boxed=False,
// format_score=0.0) does, and replies with the answer and its score
// (1.0 or 0.0). The step reward is 0 when the score improved on the
// previous call's and GSM8KPenalty otherwise (verl's -0.05); the score is
// in Metrics["score"]. grade_answer's sympy step is an exact numeric
// evaluation here: symbolic answers ("x+1" for "1+x") score 0 where verl's
// could score 1.
type Geo3K struct {
	schema chat.ToolSchema
	next   atomic.Int64
	inst   sync.Map // id → *gsm8kState
}

// DefaultGeo3KSchema is the schema of verl's geo3k example tool config.
var DefaultGeo3KSchema = chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
	Name:        "calc_geo3k_reward",
	Description: "A tool for calculating the reward of geo3k. (1.0 if parsed answer is correct, 0.0 if parsed answer is incorrect or not correctly parsed)",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","description":"The model's answer to the geo3k problem, must be a digits"}},"required":["answer"]}`),
}}

// NewGeo3K returns the checker with the given schema (a zero schema means
// DefaultGeo3KSchema). The schema must have a string property "answer".
func NewGeo3K(schema chat.ToolSchema) *Geo3K {
	if schema.Function.Name == "" {
		schema = DefaultGeo3KSchema
	}
	return &Geo3K{schema: schema}
}

// Schema implements Tool.
func (g *Geo3K) Schema() chat.ToolSchema { return g.schema }

// Create needs kwargs["ground_truth"] (a string or a number).
func (g *Geo3K) Create(_ context.Context, kwargs map[string]any) (string, error) {
	s, err := groundTruthKwarg("geo3k", kwargs)
	if err != nil {
		return "", err
	}
	id := "geo3k-" + strconv.FormatInt(g.next.Add(1), 10)
	g.inst.Store(id, &gsm8kState{groundTruth: s})
	return id, nil
}

// Execute grades {"answer": ...}.
func (g *Geo3K) Execute(_ context.Context, id string, args json.RawMessage) (Result, error) {
	v, ok := g.inst.Load(id)
	if !ok {
		return Result{}, fmt.Errorf("geo3k: unknown instance %q", id)
	}
	st := v.(*gsm8kState)
	answer, err := answerArg("geo3k", args)
	if err != nil {
		return Result{}, err
	}
	score := 0.0
	if mathgrade.GradeAnswer(answer, st.groundTruth) {
		score = 1
	}
	st.mu.Lock()
	step := GSM8KPenalty
	if score > st.best {
		step = 0
	}
	st.best = score // verl keeps the latest score, not the best
	st.mu.Unlock()
	return Result{
		Text:    fmt.Sprintf("Current parsed answer=%s reward=%s", pyRepr(answer), pyFloat(score)),
		Reward:  step,
		Metrics: map[string]float64{"score": score},
	}, nil
}

// Release implements Tool.
func (g *Geo3K) Release(_ context.Context, id string) error {
	g.inst.Delete(id)
	return nil
}
