package jinja

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fixedNow is the instant gen_golden.py gives strftime_now.
var fixedNow = time.Date(2026, 7, 26, 14, 5, 9, 0, time.UTC)

type goldenRecord struct {
	Name         string          `json:"name"`
	Template     string          `json:"template"`
	TemplateFile string          `json:"template_file"`
	Vars         json.RawMessage `json:"vars"`
	Output       *string         `json:"output"`
	Error        *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

func readGolden(t testing.TB, path string) []goldenRecord {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []goldenRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r goldenRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

// varsFromJSON decodes a golden's variables with Python's json.loads
// semantics and fixes the clock.
func varsFromJSON(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	v, err := FromJSON(raw)
	require.NoError(t, err)
	d, ok := v.(*Dict)
	require.True(t, ok, "vars must be a JSON object")
	vars := make(map[string]any, d.Len())
	for _, k := range d.Keys() {
		vars[k], _ = d.Get(k)
	}
	vars["strftime_now"] = StrftimeNow(func() time.Time { return fixedNow })
	return vars
}

func checkGolden(t *testing.T, r goldenRecord, src string) {
	t.Helper()
	vars := varsFromJSON(t, r.Vars)
	tmpl, err := Parse(src)
	if err != nil && r.Error != nil && r.Error.Kind != "exception" {
		// Both reject the template; jinja2 only finds some problems (such as
		// {% extends %} without a loader) at render time.
		return
	}
	if r.Error != nil && r.Error.Kind == "syntax" {
		if err == nil {
			_, err = tmpl.Render(vars)
		}
		require.Error(t, err, "jinja2: %s", r.Error.Message)
		return
	}
	require.NoError(t, err)
	out, err := tmpl.Render(vars)
	if r.Error != nil {
		require.Error(t, err, "jinja2 raised %s: %s; got output %q", r.Error.Kind, r.Error.Message, out)
		var exc *Exception
		if r.Error.Kind == "exception" {
			require.True(t, errors.As(err, &exc), "want *Exception, got %T: %v", err, err)
			require.Equal(t, r.Error.Message, exc.Message)
		} else {
			require.False(t, errors.As(err, &exc), "want a render error, got raise_exception: %v", err)
		}
		return
	}
	require.NoError(t, err)
	require.Equal(t, *r.Output, out)
}

func TestGoldenFeatures(t *testing.T) {
	for _, r := range readGolden(t, "testdata/golden_features.jsonl") {
		t.Run(r.Name, func(t *testing.T) { checkGolden(t, r, r.Template) })
	}
}

// sharedDir is ../shared relative to the repository root.
const sharedDir = "../../../shared"

func loadTemplateFile(t testing.TB, name string) string {
	t.Helper()
	if rest, ok := cutPrefix(name, "shared:"); ok {
		path := filepath.Join(sharedDir, rest)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			// CI always has ../shared: there its absence is a broken setup.
			if os.Getenv("CI") != "" {
				t.Fatalf("CI=1: %s absent", path)
			}
			t.Skipf("%s absent", path)
		}
		require.NoError(t, err)
		var cfg struct {
			ChatTemplate string `json:"chat_template"`
		}
		require.NoError(t, json.Unmarshal(data, &cfg))
		return cfg.ChatTemplate
	}
	data, err := os.ReadFile(filepath.Join("testdata", "templates", name))
	require.NoError(t, err)
	return string(data)
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

func TestGoldenTemplates(t *testing.T) {
	for _, r := range readGolden(t, "testdata/golden_templates.jsonl") {
		t.Run(r.Name, func(t *testing.T) { checkGolden(t, r, loadTemplateFile(t, r.TemplateFile)) })
	}
}

// TestSharedChatGoldens renders the contexts of ../shared/golden/chat_*.jsonl
// (made by the team's reference run of transformers) and compares the text.
func TestSharedChatGoldens(t *testing.T) {
	for _, fam := range []struct{ golden, config string }{
		{"chat_qwen3.jsonl", "qwen3"},
		{"chat_llama3_1.jsonl", "llama3_1"},
	} {
		goldenPath := filepath.Join(sharedDir, "golden", fam.golden)
		cfgPath := filepath.Join(sharedDir, "testdata", "tokenizers", fam.config, "tokenizer_config.json")
		data, err := os.ReadFile(cfgPath)
		if errors.Is(err, os.ErrNotExist) {
			t.Logf("skip %s: %s absent", fam.golden, cfgPath)
			continue
		}
		require.NoError(t, err)
		cfgV, err := FromJSON(data)
		require.NoError(t, err)
		cfg := cfgV.(*Dict)
		src, _ := cfg.Get("chat_template")
		tmpl, err := Parse(src.(string))
		require.NoError(t, err)
		f, err := os.Open(goldenPath)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var rec struct {
				Name    string          `json:"name"`
				Context json.RawMessage `json:"context"`
				Text    string          `json:"text"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
			t.Run(fam.config+"/"+rec.Name, func(t *testing.T) {
				vars := varsFromJSON(t, rec.Context)
				for _, k := range []string{"bos_token", "eos_token", "pad_token", "unk_token"} {
					if v, ok := cfg.Get(k); ok {
						if _, set := vars[k]; !set {
							vars[k] = v
						}
					}
				}
				out, err := tmpl.Render(vars)
				require.NoError(t, err)
				require.Equal(t, rec.Text, out)
			})
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
}

// TestGoldenRandom replays random templates rendered by jinja2
// (testdata/random_cases.py); JINJA_RANDOM_GOLDEN names a larger file made
// by the same script.
func TestGoldenRandom(t *testing.T) {
	path := os.Getenv("JINJA_RANDOM_GOLDEN")
	if path == "" {
		path = filepath.Join("testdata", "golden_random.jsonl")
	}
	recs := readGolden(t, path)
	require.NotEmpty(t, recs)
	require.Equal(t, "_vars", recs[0].Name, "the first record holds the variables")
	vars := recs[0].Vars
	for _, r := range recs[1:] {
		r.Vars = vars
		t.Run(r.Name, func(t *testing.T) { checkGolden(t, r, r.Template) })
	}
}
