package tool

import (
	"encoding/json"

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
type Geo3K struct{ answerTool }

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
	return &Geo3K{answerTool{name: "geo3k", schema: schema, score: geo3kScore}}
}

// geo3kScore is verl's geo3k.compute_score(answer, ground_truth,
// use_boxed=False, format_score=0.0): 1 when grade_answer accepts it.
func geo3kScore(answer, groundTruth string) float64 {
	if mathgrade.GradeAnswer(answer, groundTruth) {
		return 1
	}
	return 0
}
