package jinja

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func render(t *testing.T, src string, vars map[string]any) string {
	t.Helper()
	tmpl, err := Parse(src)
	require.NoError(t, err)
	out, err := tmpl.Render(vars)
	require.NoError(t, err)
	return out
}

func TestFromJSON(t *testing.T) {
	tests := []struct {
		name, in, want string // want is the template's {{ v }} and {{ v|tojson }}
	}{
		{"object order", `{"b": 1, "a": {"z": 2, "y": 3}}`, `{'b': 1, 'a': {'z': 2, 'y': 3}}|{"b": 1, "a": {"z": 2, "y": 3}}`},
		{"int vs float", `[1, 1.0, 1e2, -0, 2.50, 12345678901234]`, `[1, 1.0, 100.0, 0, 2.5, 12345678901234]|[1, 1.0, 100.0, 0, 2.5, 12345678901234]`},
		{"big int kept exact", `1000000000000000019884624838656`, `1000000000000000019884624838656|1000000000000000019884624838656`},
		{"literals", `[true, false, null, "x\u00e9\n"]`, "[True, False, None, 'xé\\n']|[true, false, null, \"xé\\n\"]"},
		{"empty", `{"a": [], "b": {}}`, `{'a': [], 'b': {}}|{"a": [], "b": {}}`},
	}
	tmpl, err := Parse("{{ v }}|{{ v|tojson }}")
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := FromJSON([]byte(tc.in))
			require.NoError(t, err)
			out, err := tmpl.Render(map[string]any{"v": v})
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
		})
	}
	for _, bad := range []string{``, `{`, `[1,]`, `{"a" 1}`, `1 2`, `{1: 2}`, `"\x"`} {
		_, err := FromJSON([]byte(bad))
		require.Error(t, err, "input %q", bad)
	}
}

func TestDict(t *testing.T) {
	d := NewDict()
	for i := 20; i > 0; i-- { // past the index threshold
		d.Set(fmt.Sprintf("k%02d", i), i)
	}
	d.Set("k05", "again") // keeps its position
	require.Equal(t, 20, d.Len())
	require.Equal(t, "k20", d.Keys()[0])
	v, ok := d.Get("k05")
	require.True(t, ok)
	require.Equal(t, "again", v)
	_, ok = d.Get("nope")
	require.False(t, ok)
	out := render(t, "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}", map[string]any{"d": d})
	require.True(t, strings.HasPrefix(out, "k20=20,k19=19,"), out)
	require.Contains(t, out, "k05=again,")
}

// TestGoValues checks the documented mapping of Go values to Python values.
func TestGoValues(t *testing.T) {
	vars := map[string]any{
		"m":    map[string]any{"b": 1, "a": 2},
		"ss":   []string{"x", "y"},
		"i8":   int8(-3),
		"u32":  uint32(7),
		"i":    42,
		"f32":  float32(0.5),
		"tup":  Tuple{1, "a"},
		"maps": []map[string]any{{"k": "v"}},
		"fn": Func(func(args []any, kw *Dict) (any, error) {
			v, _ := kw.Get("suffix")
			return fmt.Sprint(args[0]) + v.(string), nil
		}),
	}
	out := render(t, "{{ m }} {{ m|tojson }} {{ ss }} {{ ss|join('+') }} {{ i8 + u32 }} {{ i // 5 }} {{ f32 * 2 }} {{ tup }} {{ maps[0].k }} {{ fn(3, suffix='!') }}", vars)
	require.Equal(t, `{'a': 2, 'b': 1} {"a": 2, "b": 1} ['x', 'y'] x+y 4 8 1.0 (1, 'a') v 3!`, out)
}

func TestFuncErrorIsWrapped(t *testing.T) {
	boom := errors.New("boom")
	tmpl, err := Parse("line1\n{{ fn() }}")
	require.NoError(t, err)
	_, err = tmpl.Render(map[string]any{"fn": Func(func([]any, *Dict) (any, error) { return nil, boom })})
	require.ErrorIs(t, err, boom)
	var re *RenderError
	require.True(t, errors.As(err, &re))
	require.Equal(t, 2, re.Line)
}

func TestRaiseException(t *testing.T) {
	tmpl, err := Parse("a{% if x %}{{ raise_exception('no ' ~ x) }}{% endif %}b")
	require.NoError(t, err)
	_, err = tmpl.Render(map[string]any{"x": "tools"})
	var exc *Exception
	require.True(t, errors.As(err, &exc), "got %T %v", err, err)
	require.Equal(t, "no tools", exc.Message)
	require.Equal(t, "no tools", err.Error())
	out, err := tmpl.Render(nil)
	require.NoError(t, err)
	require.Equal(t, "ab", out)
}

func TestSyntaxErrorPosition(t *testing.T) {
	tests := []struct {
		src       string
		line, col int
		msg       string
	}{
		{"ab\n  {{ 1 + }}", 2, 10, "unexpected end of print statement"},
		{"{% if x %}\n{% endfor %}", 2, 4, "encountered unknown tag 'endfor'"},
		{"x\n\n{{ 'abc }}", 3, 4, "unterminated string"},
		{"{# never", 1, 1, "missing end of comment tag"},
		{"{{ x|nosuch }}", 1, 6, "no filter named 'nosuch'"},
		{"{{ x is nosuch }}", 1, 9, "no test named 'nosuch'"},
		{"héllo {{ ) }}", 1, 10, "unexpected ')'"},
		{"{% for x in y %}", 1, 17, "unexpected end of template"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.src)
		var se *SyntaxError
		require.True(t, errors.As(err, &se), "%q: got %v", tc.src, err)
		require.Equal(t, tc.line, se.Line, "%q: %v", tc.src, err)
		require.Equal(t, tc.col, se.Col, "%q: %v", tc.src, err)
		require.Contains(t, se.Msg, tc.msg)
		require.Contains(t, err.Error(), fmt.Sprintf("%d:%d", tc.line, tc.col))
	}
}

func TestRenderErrorLine(t *testing.T) {
	tmpl, err := Parse("a\nb\n{% for m in msgs %}\n{{ m.x.y }}\n{% endfor %}")
	require.NoError(t, err)
	_, err = tmpl.Render(map[string]any{"msgs": []any{map[string]any{}}})
	var re *RenderError
	require.True(t, errors.As(err, &re), "%v", err)
	require.Equal(t, 4, re.Line)
	require.Equal(t, "'dict object' has no attribute 'x'", re.Msg)
}

func TestLimits(t *testing.T) {
	// Smaller budgets keep the test fast; the mechanism is the same.
	defer func(s, w int) { maxSteps, maxWork = s, w }(maxSteps, maxWork)
	maxSteps, maxWork = 100_000, 64<<20
	tests := []struct{ name, src string }{
		{"nested loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"},
		{"huge repeat", "{{ 'a' * 1000000000 }}"},
		{"output size", "{% for i in range(100) %}{{ 'x' * 33000000 }}{% endfor %}"},
		{"string work", "{% set s = 'x' * 1000000 %}{% for i in range(1000) %}{% set t = s ~ s %}{% endfor %}"},
		{"recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"},
		{"range", "{{ range(1000000) }}"},
		{"indent width", "{{ 'a\nb'|indent(10000000000000) }}"},
		{"tojson indent", "{{ [1]|tojson(indent=100000000000) }}"},
		{"center width", "{{ 'a'|center(10000000000000) }}"},
		{"ljust width", "{{ 'a'.ljust(10000000000000) }}"},
		{"zfill width", "{{ 'a'.zfill(10000000000000) }}"},
		{"format width", "{{ '%99999999999d' % 1 }}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse(tc.src)
			require.NoError(t, err)
			_, err = tmpl.Render(nil)
			require.ErrorIs(t, err, ErrLimit)
		})
	}
	_, err := Parse("{{ " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + " }}")
	require.Error(t, err)
	_, err = Parse(strings.Repeat("{% if x %}", 1000) + strings.Repeat("{% endif %}", 1000))
	require.Error(t, err)
}

func TestStrftimeWeeks(t *testing.T) {
	// Expected values from Python's datetime.strftime.
	tests := []struct {
		y, m, d int
		want    string
	}{
		{2026, 1, 1, "2026-01-01 Thu 00 00 2026 01"},
		{2027, 1, 3, "2027-01-03 Sun 01 00 2026 53"},
		{2024, 12, 30, "2024-12-30 Mon 52 53 2025 01"},
		{2021, 1, 3, "2021-01-03 Sun 01 00 2020 53"},
	}
	for _, tc := range tests {
		got := Strftime(time.Date(tc.y, time.Month(tc.m), tc.d, 0, 0, 0, 0, time.UTC), "%Y-%m-%d %a %U %W %G %V")
		require.Equal(t, tc.want, got)
	}
}

func TestStrftime(t *testing.T) {
	tm := time.Date(2024, 3, 5, 7, 8, 9, 123456000, time.UTC)
	require.Equal(t, "2024-03-05 07:08:09 05 Mar 2024 Tuesday March 065 07AM 24 Tue  5 123456 % %Q",
		Strftime(tm, "%Y-%m-%d %H:%M:%S %d %b %Y %A %B %j %I%p %y %a %e %f %% %Q"))
	out := render(t, "{{ strftime_now('%d %B %Y') }}", map[string]any{"strftime_now": StrftimeNow(func() time.Time { return tm })})
	require.Equal(t, "05 March 2024", out)
	// Without an override the real clock is used.
	now := render(t, "{{ strftime_now('%Y') }}", nil)
	require.Equal(t, fmt.Sprint(time.Now().Year()), now)
}

// TestConcurrentRender renders one template from many goroutines (run with
// -race): templates are immutable after Parse.
func TestConcurrentRender(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "templates", "qwen3.jinja"))
	require.NoError(t, err)
	tmpl, err := Parse(string(src))
	require.NoError(t, err)
	var wg sync.WaitGroup
	outs := make([]string, 8)
	errs := make([]error, 8)
	for g := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				msgs := []any{map[string]any{"role": "user", "content": fmt.Sprint("q", g)}}
				outs[g], errs[g] = tmpl.Render(map[string]any{"messages": msgs, "add_generation_prompt": true})
			}
		}()
	}
	wg.Wait()
	for g := range outs {
		require.NoError(t, errs[g])
		require.Equal(t, fmt.Sprintf("<|im_start|>user\nq%d<|im_end|>\n<|im_start|>assistant\n", g), outs[g])
	}
}

func TestBlockFilterSharedAcrossRenders(t *testing.T) {
	tmpl, err := Parse("{% set x | upper %}{{ v }}{% endset %}{{ x }}")
	require.NoError(t, err)
	for _, v := range []string{"a", "b"} {
		out, err := tmpl.Render(map[string]any{"v": v})
		require.NoError(t, err)
		require.Equal(t, strings.ToUpper(v), out)
	}
}
