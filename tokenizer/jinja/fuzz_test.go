package jinja

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseRender feeds arbitrary template text through Parse and Render
// with a small context: neither may panic or hang (limits turn runaway
// templates into ErrLimit errors).
func FuzzParseRender(f *testing.F) {
	for _, r := range readGolden(f, filepath.Join("testdata", "golden_features.jsonl")) {
		f.Add(r.Template)
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "templates"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata", "templates", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	vars := varsFromJSON(f, []byte(`{
		"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
			{"role": "assistant", "content": "<think>r</think>a", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
			{"role": "tool", "content": "out"}],
		"tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
		"add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "xs": [3, 1, 2], "d": {"a": 1}, "s": " x "}`))
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src)
		if err != nil {
			return
		}
		_, _ = tmpl.Render(vars)
	})
}

// FuzzFromJSON checks that FromJSON accepts exactly the valid JSON documents
// and that tojson of the result is valid JSON again.
func FuzzFromJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x", null, true]}`, `[]`, `"\u00e9\ud83d\ude00"`, `1e400`, `-0`,
		`{"b": {"c": {}}, "a": 1}`, `123456789012345678901234567890`, `{"a":1,"a":2}`, `[1,]`, `{`} {
		f.Add([]byte(s))
	}
	tmpl, err := Parse("{{ v|tojson }}")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := FromJSON(data)
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid=%v but FromJSON err=%v for %q", valid, err, data)
		}
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var ref any
		if err := dec.Decode(&ref); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", data, err)
		}
		if err := sameJSON(v, ref); err != nil {
			t.Fatalf("FromJSON(%q) differs from encoding/json: %v", data, err)
		}
		out, err := tmpl.Render(map[string]any{"v": v})
		if err != nil {
			t.Fatalf("tojson of %q: %v", data, err)
		}
		if !json.Valid([]byte(out)) && !strings.Contains(out, "Infinity") {
			t.Fatalf("tojson of %q gave invalid JSON %q", data, out)
		}
	})
}

// sameJSON compares a FromJSON value with encoding/json's decoding of the
// same text (UseNumber): same structure, strings and numbers.
func sameJSON(v, ref any) error {
	switch r := ref.(type) {
	case map[string]any:
		d, ok := v.(*Dict)
		if !ok || d.Len() != len(r) {
			return fmt.Errorf("object %v vs %v", v, ref)
		}
		for k, rv := range r {
			dv, ok := d.Get(k)
			if !ok {
				return fmt.Errorf("missing key %q", k)
			}
			if err := sameJSON(dv, rv); err != nil {
				return err
			}
		}
		return nil
	case []any:
		l, ok := v.([]any)
		if !ok || len(l) != len(r) {
			return fmt.Errorf("array %v vs %v", v, ref)
		}
		for i := range r {
			if err := sameJSON(l[i], r[i]); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		switch x := v.(type) {
		case int64:
			if strconv.FormatInt(x, 10) != strings.TrimPrefix(string(r), "-0") && !(x == 0 && string(r) == "-0") {
				if n, err := strconv.ParseInt(string(r), 10, 64); err != nil || n != x {
					return fmt.Errorf("int %d vs %s", x, r)
				}
			}
		case float64:
			f, err := strconv.ParseFloat(string(r), 64)
			if err != nil && !math.IsInf(f, 0) {
				return fmt.Errorf("float %v vs %s", x, r)
			}
			if f != x && !(math.IsNaN(f) && math.IsNaN(x)) {
				return fmt.Errorf("float %v vs %s", x, r)
			}
		case bigInt:
			if string(x) != string(r) {
				return fmt.Errorf("big int %s vs %s", x, r)
			}
		default:
			return fmt.Errorf("number %v (%T) vs %s", v, v, r)
		}
		return nil
	}
	if v != ref {
		return fmt.Errorf("%#v vs %#v", v, ref)
	}
	return nil
}
