// Package jinja is a Jinja2 template engine for Hugging Face chat templates.
//
// It renders templates exactly as transformers' apply_chat_template does:
// jinja2's ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
// the loopcontrols extension, transformers' {% generation %} tag, and the
// globals raise_exception, strftime_now, namespace, range and dict; tojson is
// Python's json.dumps(ensure_ascii=False) with indent, separators and
// sort_keys. Values follow Python semantics (truthiness, None/True/False
// printing, repr of lists and dicts, % formatting, str methods, slicing), and
// undefined values behave like jinja2's default Undefined.
//
// Parse compiles a template once into a tree that many goroutines may render
// concurrently. Render takes the variables as Go values; see Render for how
// they map to Python values, and FromJSON for turning JSON (tool schemas,
// tool-call arguments) into values with key order and int/float kept.
//
//	t, err := jinja.Parse(src)
//	out, err := t.Render(map[string]any{"messages": msgs, "add_generation_prompt": true})
//
// Values passed to many renders (tool schemas) can be frozen with Freeze,
// which keeps their tojson text; AppendRender writes into a caller's buffer
// for callers that only compare or cut the output.
//
// A raise_exception(msg) in the template makes Render return *Exception;
// syntax errors are *SyntaxError with line and column; other runtime errors
// are *RenderError. Loops, output size, macro recursion and range() are
// bounded (ErrLimit), so untrusted templates cannot hang or exhaust memory.
//
// Not supported (errors at Parse): template inheritance and inclusion
// (extends, include, import, block) and autoescape.
package jinja
