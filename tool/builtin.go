package tool

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/chat"
)

// Class names of the built-in tools of this package. verl's GSM8K tool
// class is registered as an alias so its example configs load unchanged.
const (
	ClassCalculator = "calculator"
	ClassGSM8K      = "gsm8k"
	ClassGeo3K      = "geo3k"
	ClassHTTP       = "http"
	classVerlGSM8K  = "verl.tools.gsm8k_tool.Gsm8kTool"
	classVerlGeo3K  = "verl.tools.geo3k_tool.Geo3kTool"
)

func init() {
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
	geo3k := func(_ context.Context, c Config) ([]Tool, error) {
		if err := c.DecodeConfig(&struct{}{}); err != nil {
			return nil, err
		}
		var sc = DefaultGeo3KSchema
		if c.Schema != nil {
			sc = *c.Schema
		}
		return []Tool{NewGeo3K(sc)}, nil
	}
	Register(ClassGeo3K, geo3k)
	Register(classVerlGeo3K, geo3k)
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
