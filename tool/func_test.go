package tool

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

type searchArgs struct {
	Query string   `json:"query" jsonschema:"what to look for"`
	Limit int      `json:"limit,omitempty" jsonschema:"maximum number of hits"`
	Tags  []string `json:"tags,omitempty"`
	Exact bool     `json:"exact"`
}

func TestNewFunc(t *testing.T) {
	ctx := context.Background()
	f, err := NewFunc("search", "Search the corpus.", func(_ context.Context, a searchArgs) (Result, error) {
		if a.Query == "fail" {
			return Result{}, errors.New("backend down")
		}
		return Result{Text: a.Query, Reward: float64(a.Limit), Metrics: map[string]float64{"tags": float64(len(a.Tags))}}, nil
	})
	require.NoError(t, err)
	sc := f.Schema()
	require.Equal(t, "search", sc.Function.Name)
	require.Equal(t, "Search the corpus.", sc.Function.Description)
	// Properties in field order (chat templates render them in this order).
	require.Equal(t, `{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":"integer","description":"maximum number of hits"},"tags":{"type":["null","array"],"items":{"type":"string"}},"exact":{"type":"boolean"}},"required":["query","exact"],"additionalProperties":false}`,
		string(sc.Function.Parameters))

	s, err := NewSet(f)
	require.NoError(t, err)
	ss := s.Session(nil)
	defer func() { require.NoError(t, ss.Close(ctx)) }()
	r := ss.Call(ctx, call("search", `{"query": "go", "limit": 3, "tags": ["a", "b"], "exact": true}`))
	require.NoError(t, r.Err)
	require.Equal(t, CallResult{Name: "search", Text: "go", Reward: 3, Metrics: map[string]float64{"tags": 2}, Duration: r.Duration}, r)

	r = ss.Call(ctx, call("search", `{"query": "go", "limit": "3"}`))
	require.ErrorIs(t, r.Err, ErrInvalidArguments)
	require.Equal(t, `Error: invalid arguments for tool "search": /: missing required property "exact"; /limit: expected integer, got string`, r.Text)

	r = ss.Call(ctx, call("search", `{"query": "go", "exact": false, "tags": [1]}`))
	require.Equal(t, `Error: invalid arguments for tool "search": /tags/0: expected string, got number`, r.Text)

	r = ss.Call(ctx, call("search", `{"query": "fail", "exact": false}`))
	require.ErrorIs(t, r.Err, ErrExecution)
	require.Equal(t, `Error when executing tool "search": backend down`, r.Text)
}

func TestNewFuncStringResult(t *testing.T) {
	f, err := NewFunc("echo", "", func(_ context.Context, a struct {
		S string `json:"s"`
	}) (string, error) {
		return a.S + a.S, nil
	})
	require.NoError(t, err)
	r, err := f.Execute(context.Background(), "", []byte(`{"s":"ab"}`))
	require.NoError(t, err)
	require.Equal(t, Result{Text: "abab"}, r)
}

func TestNewFuncErrors(t *testing.T) {
	_, err := NewFunc("", "", func(context.Context, searchArgs) (string, error) { return "", nil })
	require.ErrorContains(t, err, "empty name")
	_, err = NewFunc[searchArgs, string]("x", "", nil)
	require.ErrorContains(t, err, "nil function")
	_, err = NewFunc("x", "", func(context.Context, int) (string, error) { return "", nil })
	require.ErrorContains(t, err, `arguments must be a struct or map (JSON object), got schema type "integer"`)
	_, err = NewFunc("x", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
	require.ErrorContains(t, err, "deriving the argument schema")
}
