package tool

import (
	"context"
	"fmt"
)

// Class names of the built-in tools of this package. verl's GSM8K tool
// class is registered as an alias so its example configs load unchanged.
const (
	ClassCalculator = "calculator"
	ClassGSM8K      = "gsm8k"
	ClassHTTP       = "http"
	classVerlGSM8K  = "verl.tools.gsm8k_tool.Gsm8kTool"
)

func init() {
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
