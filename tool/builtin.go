package tool

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/chat"
)

// Class names of the built-in tools of this package. verl's GSM8K tool
// class is registered as an alias so its example configs load unchanged.
const (
	ClassCalculator = "calculator"
	ClassGSM8K      = "gsm8k"
	ClassHTTP       = "http"
	classVerlGSM8K  = "verl.tools.gsm8k_tool.Gsm8kTool"
)

// verl's Geo3kTool is registered so that its configs fail with the reason
// rather than as an unknown class: it grades with mathruler's sympy-based
// grade_answer, which has no port here.
var imageTools = []string{
	"verl.tools.geo3k_tool.Geo3kTool",
}

// ErrNeedsImages is returned for verl's image tools.
var ErrNeedsImages = errors.New("grades with mathruler's grade_answer (sympy), which agentrl has no port of")

func init() {
	for _, c := range imageTools {
		Register(c, func(context.Context, Config) ([]Tool, error) {
			return nil, ErrNeedsImages
		})
	}
	Register(ClassImageZoomIn, func(_ context.Context, c Config) ([]Tool, error) {
		var zc ZoomInConfig
		if err := c.DecodeConfig(&zc); err != nil {
			return nil, err
		}
		var sc chat.ToolSchema
		if c.Schema != nil {
			sc = *c.Schema
		}
		return []Tool{NewZoomIn(sc, zc)}, nil
	})
	Register(ClassCalculator, func(_ context.Context, c Config) ([]Tool, error) {
		if err := c.DecodeConfig(&struct{}{}); err != nil {
			return nil, err
		}
		t := NewCalculator()
		if c.Schema != nil {
			t = WithSchema(t, *c.Schema)
		}
		return []Tool{t}, nil
	})
	gsm8k := func(_ context.Context, c Config) ([]Tool, error) {
		if err := c.DecodeConfig(&struct{}{}); err != nil {
			return nil, err
		}
		var sc = DefaultGSM8KSchema
		if c.Schema != nil {
			sc = *c.Schema
		}
		return []Tool{NewGSM8K(sc)}, nil
	}
	Register(ClassGSM8K, gsm8k)
	Register(classVerlGSM8K, gsm8k)
	Register(ClassHTTP, func(_ context.Context, c Config) ([]Tool, error) {
		var hc HTTPConfig
		if err := c.DecodeConfig(&hc); err != nil {
			return nil, err
		}
		if c.Schema == nil {
			return nil, fmt.Errorf("an http tool needs a tool_schema")
		}
		t, err := NewHTTP(*c.Schema, hc)
		if err != nil {
			return nil, err
		}
		return []Tool{t}, nil
	})
}
