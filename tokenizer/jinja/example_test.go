package jinja_test

import (
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/tokenizer/jinja"
)

func Example() {
	tmpl, err := jinja.Parse(`{%- for m in messages %}
<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{%- endfor %}
{%- if add_generation_prompt %}
<|im_start|>assistant
{%- endif %}`)
	if err != nil {
		panic(err)
	}
	// Tool schemas and arguments come as JSON; FromJSON keeps key order and
	// int/float exactly as Python's json.loads does.
	messages, err := jinja.FromJSON([]byte(`[{"role": "user", "content": "Hi!"}]`))
	if err != nil {
		panic(err)
	}
	out, err := tmpl.Render(map[string]any{"messages": messages, "add_generation_prompt": true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", out)
	// Output: "<|im_start|>user\nHi!<|im_end|><|im_start|>assistant"
}

func ExampleException() {
	tmpl, _ := jinja.Parse(`{% if messages[0].role != 'user' %}{{ raise_exception('first message must be from the user') }}{% endif %}`)
	_, err := tmpl.Render(map[string]any{"messages": []any{map[string]any{"role": "tool"}}})
	var exc *jinja.Exception
	fmt.Println(errors.As(err, &exc), exc.Message)
	// Output: true first message must be from the user
}

func ExampleFreeze() {
	tools, err := jinja.FromJSON([]byte(`[{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}]`))
	if err != nil {
		panic(err)
	}
	// Frozen once, the schemas are rendered from their kept JSON text on
	// every later render; they must not be changed afterwards.
	jinja.Freeze(tools)
	tmpl, err := jinja.Parse(`{% for t in tools %}{{ t|tojson }}{% endfor %}`)
	if err != nil {
		panic(err)
	}
	var buf []byte
	for range 2 {
		buf, err = tmpl.AppendRender(buf[:0], map[string]any{"tools": tools})
		if err != nil {
			panic(err)
		}
	}
	fmt.Println(string(buf))
	// Output: {"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}
}
