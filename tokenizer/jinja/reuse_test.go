// Tests of what renders keep or reuse between calls: frozen values and
// their tojson text, small dicts, recycled loop objects, AppendRender.

package jinja

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomJSON writes a random JSON value: nested objects and lists, strings
// with escapes and non-ASCII text, ints, floats and literals.
func randomJSON(rng *rand.Rand, b *strings.Builder, depth int) {
	k := rng.IntN(8)
	if depth > 4 {
		k = 4 + rng.IntN(4)
	}
	switch k {
	case 0, 1:
		b.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%q:", []string{"type", "name", "a\"b", "é", "properties", "x"}[rng.IntN(6)]+fmt.Sprint(i))
			randomJSON(rng, b, depth+1)
		}
		b.WriteByte('}')
	case 2, 3:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(rng, b, depth+1)
		}
		b.WriteByte(']')
	case 4:
		b.WriteString([]string{`"plain"`, `"tab\there"`, `"quote \" and \\ back"`, `"日本語"`, `"\u0001"`, `""`}[rng.IntN(6)])
	case 5:
		fmt.Fprint(b, rng.IntN(2000)-1000)
	case 6:
		b.WriteString([]string{"1.5", "1e300", "-0.0", "2.50", "12345678901234567890123"}[rng.IntN(5)])
	default:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	}
}

// TestFreezeRendersTheSame renders random values frozen and as an
// unfrozen copy through tojson with default and other arguments, inside
// lists and dicts, iterated and printed: the output must be identical.
func TestFreezeRendersTheSame(t *testing.T) {
	tmpl, err := Parse(`{{ v|tojson }}|{{ [v, {"k": v}]|tojson }}|{{ v|tojson(indent=2) }}|{{ v|tojson(sort_keys=true) }}|` +
		`{{ v|tojson(separators=(",", ":")) }}|{{ v }}|{% if v is mapping %}{% for k in v %}{{ k }}={{ v[k]|tojson }};{% endfor %}{% endif %}|{{ v|string }}`)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		var b strings.Builder
		randomJSON(rng, &b, 0)
		src := []byte(b.String())
		plain, err := FromJSON(src)
		require.NoError(t, err)
		frozen, err := FromJSON(src)
		require.NoError(t, err)
		Freeze(frozen)
		want, werr := tmpl.Render(map[string]any{"v": plain})
		got, gerr := tmpl.Render(map[string]any{"v": frozen})
		require.Equal(t, werr, gerr, "%s", src)
		require.Equal(t, want, got, "%s", src)
	}
}

// nested returns n dicts, each holding the next under "a".
func nested(n int) *Dict {
	d := NewDict()
	d.Set("a", int64(1))
	for i := 1; i < n; i++ {
		p := NewDict()
		p.Set("a", d)
		d = p
	}
	return d
}

// TestFreezeDepthLimit: a frozen dict near tojson's depth limit must fail
// exactly where the unfrozen one fails, however deep it is placed.
func TestFreezeDepthLimit(t *testing.T) {
	for _, n := range []int{maxDepth - 2, maxDepth - 1, maxDepth, maxDepth + 1, 2*maxDepth + 5} {
		for _, wrap := range []int{0, 1, 2, 3} {
			src := "{{ v|tojson }}"
			for range wrap {
				src = strings.Replace(src, "v", "[v]", 1)
			}
			tmpl, err := Parse(src)
			require.NoError(t, err)
			plain, frozen := nested(n), nested(n)
			Freeze(frozen)
			want, werr := tmpl.Render(map[string]any{"v": plain})
			got, gerr := tmpl.Render(map[string]any{"v": frozen})
			require.Equal(t, werr == nil, gerr == nil, "n=%d wrap=%d", n, wrap)
			if werr != nil {
				require.Equal(t, werr.Error(), gerr.Error())
			}
			require.Equal(t, want, got, "n=%d wrap=%d", n, wrap)
		}
	}
}

func TestFreezeCyclesAndForeignValues(t *testing.T) {
	tmpl, err := Parse("{{ v|tojson }}")
	require.NoError(t, err)

	cyc := NewDict()
	cyc.Set("self", cyc)
	Freeze(cyc) // must return
	_, err = tmpl.Render(map[string]any{"v": cyc})
	require.ErrorContains(t, err, "nested too deeply")

	// A Go map inside a frozen dict can still change: its text is never
	// kept, so the output follows the map.
	m := map[string]any{"x": int64(1)}
	d := NewDict()
	d.Set("m", m)
	Freeze(d)
	out, err := tmpl.Render(map[string]any{"v": d})
	require.NoError(t, err)
	require.Equal(t, `{"m": {"x": 1}}`, out)
	m["x"] = int64(2)
	out, err = tmpl.Render(map[string]any{"v": d})
	require.NoError(t, err)
	require.Equal(t, `{"m": {"x": 2}}`, out)
}

func TestFreezeRejectsSet(t *testing.T) {
	v, err := FromJSON([]byte(`{"a": {"b": 1}}`))
	require.NoError(t, err)
	Freeze(v)
	inner, _ := v.(*Dict).Get("a")
	require.PanicsWithValue(t, "jinja: Set on a frozen Dict (see Freeze)", func() { inner.(*Dict).Set("b", int64(2)) })
	require.Panics(t, func() { v.(*Dict).Set("c", int64(2)) })
}

// TestFreezeConcurrentRenders renders one frozen value from several
// goroutines (run with -race).
func TestFreezeConcurrentRenders(t *testing.T) {
	v, err := FromJSON([]byte(`[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}]`))
	require.NoError(t, err)
	Freeze(v)
	tmpl, err := Parse("{% for t in tools %}{{ t|tojson }}{% endfor %}")
	require.NoError(t, err)
	want := `{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}`
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				out, err := tmpl.Render(map[string]any{"tools": v})
				if err == nil && out != want {
					err = fmt.Errorf("got %q", out)
				}
				if err != nil {
					errs[g] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestNewDictCap(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 5, 8, 9, 20} {
		d := NewDictCap(n)
		for i := range n + 3 { // past the room reserved
			d.Set(fmt.Sprintf("k%d", i), int64(i))
		}
		d.Set("k0", "again") // keeps its slot
		require.Equal(t, n+3, d.Len())
		require.Equal(t, "k0", d.Keys()[0])
		v, ok := d.Get("k0")
		require.True(t, ok)
		require.Equal(t, "again", v)
		v, ok = d.Get(fmt.Sprintf("k%d", n+2))
		require.True(t, ok)
		require.Equal(t, int64(n+2), v)
	}
}

// TestLoopObjectReuse: loops recycle their loop object only when the
// template cannot keep it past the loop; the outputs are jinja2's.
func TestLoopObjectReuse(t *testing.T) {
	tests := []struct {
		name, src, want string
		reuse           bool
	}{
		{"attributes only, nested", `{% for a in xs %}{% for b in xs %}{{ loop.index }}{{ loop.last }}{% endfor %}{{ loop.index0 }};{% endfor %}{% for c in xs %}{{ loop.revindex }}{% endfor %}`,
			"1False2True0;1False2True1;21", true},
		{"kept in a variable", `{% for a in xs %}{% set l = loop %}{{ l.index }}{% endfor %}`, "12", false},
		{"kept in a namespace", `{% set ns = namespace(l=none) %}{% for a in xs %}{% set ns.l = loop %}{% endfor %}{% for b in [7, 8, 9] %}{% endfor %}{{ ns.l.index }}/{{ ns.l.length }}`, "2/2", false},
		{"bound cycle", `{% for a in xs %}{% set c = loop.cycle %}{{ c('x', 'y') }}{% endfor %}`, "xy", false},
		{"macro", `{% macro m() %}{{ caller() }}{% endmacro %}{% for a in xs %}{% call m() %}{{ loop.index }}{% endcall %}{% endfor %}`, "12", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse(tc.src)
			require.NoError(t, err)
			reuse := false
			for _, s := range tmpl.body {
				if f, ok := s.(*forNode); ok && f.reuseLoop {
					reuse = true
				}
			}
			require.Equal(t, tc.reuse, reuse)
			for range 3 { // renderers are pooled: later renders reuse loop objects
				out, err := tmpl.Render(map[string]any{"xs": []any{int64(1), int64(2)}})
				require.NoError(t, err)
				require.Equal(t, tc.want, out)
			}
		})
	}
}

func TestAppendRender(t *testing.T) {
	tmpl, err := Parse(`{% for m in messages %}<{{ m.role }}>{{ m.content|trim }}{% endfor %}{% if fail %}{{ raise_exception("no") }}{% endif %}`)
	require.NoError(t, err)
	msgs, err := FromJSON([]byte(`[{"role": "user", "content": " hi "}, {"role": "assistant", "content": "yo"}]`))
	require.NoError(t, err)
	vars := map[string]any{"messages": msgs}
	want, err := tmpl.Render(vars)
	require.NoError(t, err)
	require.Equal(t, "<user>hi<assistant>yo", want)

	for _, dst := range [][]byte{nil, {}, []byte("prefix|"), make([]byte, 3, 1000)} {
		prefix := string(dst)
		out, err := tmpl.AppendRender(dst, vars)
		require.NoError(t, err)
		require.Equal(t, prefix+want, string(out))
		out2, err := tmpl.AppendRender(out, vars) // twice into one buffer
		require.NoError(t, err)
		require.Equal(t, prefix+want+want, string(out2))
		require.Equal(t, prefix+want, string(out2[:len(out)]))
	}
	// Renders in between must not touch an output already returned.
	out, err := tmpl.AppendRender(nil, vars)
	require.NoError(t, err)
	for range 3 {
		_, err := tmpl.Render(map[string]any{"messages": []any{}})
		require.NoError(t, err)
	}
	require.Equal(t, want, string(out))

	buf := []byte("keep")
	got, err := tmpl.AppendRender(buf, map[string]any{"messages": msgs, "fail": true})
	var exc *Exception
	require.ErrorAs(t, err, &exc)
	require.Equal(t, "keep", string(got))
}
