package tool

import (
	"context"
	"encoding/json"
	"testing"
)

func TestZZShowStack(t *testing.T) {
	s, _ := NewSet(&fakeTool{name: "boom", execute: func(context.Context, string, json.RawMessage) (Result, error) {
		var m map[string]int
		m["x"] = 1
		return Result{}, nil
	}})
	ss := s.Session(nil)
	r := ss.Call(context.Background(), call("boom", `{}`))
	t.Log(r.Err)
	ss.Close(context.Background())
}
