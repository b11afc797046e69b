package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// qwenTokenizerDir unpacks the Qwen3 tokenizer committed (gzipped) in the
// tokenizer package's testdata.
func qwenTokenizerDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		f, err := os.Open(filepath.Join("..", "..", "tokenizer", "testdata", "qwen3", name+".gz"))
		require.NoError(t, err)
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		data, err := io.ReadAll(zr)
		require.NoError(t, err)
		f.Close()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	return dir
}

func runTokenizeCmd(t *testing.T, args []string, stdin string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runMain(context.Background(), append([]string{"tokenize"}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestTokenizeGoldens feeds the golden inputs through the command and
// compares every output line with the golden line.
func TestTokenizeGoldens(t *testing.T) {
	dir := qwenTokenizerDir(t)
	// Both golden files in one run: loading the tokenizer dominates.
	var in strings.Builder
	var want []map[string]any
	for _, name := range []string{"encode_qwen3.jsonl", "chat_qwen3.jsonl"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "golden", name))
		if os.IsNotExist(err) {
			t.Skip("shared goldens not present")
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var rec map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
			var w map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &w))
			want = append(want, w)
			// Drop the outputs; keep the inputs (name, text or context).
			if _, ok := rec["context"]; ok {
				delete(rec, "text")
			}
			delete(rec, "ids")
			b, err := json.Marshal(rec)
			require.NoError(t, err)
			in.Write(b)
			in.WriteByte('\n')
		}
	}
	code, out, errOut := runTokenizeCmd(t, []string{"--tokenizer", dir}, in.String())
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, len(want))
	for i, l := range lines {
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &got), l)
		require.Equal(t, want[i], got, "line %d", i+1)
	}
}

func TestTokenizeCommand(t *testing.T) {
	dir := qwenTokenizerDir(t)
	cases := []struct {
		name     string
		args     []string
		in       string
		wantOut  string
		wantCode int
		wantErr  string
	}{
		// One run covers the record kinds: text (other fields kept in
		// order), blank lines kept, a context, and a last line without a
		// newline.
		// One run covers the record kinds: text (other fields kept in
		// order), blank lines kept, a context, a template error as a field,
		// lines that are not records, and a last line without a newline.
		{name: "records", in: `{"id":7,"text":"Hello, world!"}` + "\n" + "\n" + `{"text":""}` + "\n" +
			`{"context":{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}}` + "\n" +
			"not json\n" + `{"x":1}` + "\n" + `{"ids":[1]}` + "\n" +
			`{"context":{"messages":[{"role":"user"}]}}` + "\n" + `{"text":"hello"}`,
			wantCode: 1, wantErr: "3 input line(s)",
			wantOut: `{"id":7,"text":"Hello, world!","ids":[9707,11,1879,0]}` + "\n" + "\n" + `{"text":"","ids":[]}` + "\n" +
				`{"context":{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true},"text":"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n","ids":[151644,872,198,6023,151645,198,151644,77091,198]}` + "\n" +
				`{"line":5,"error":"invalid JSON: invalid character 'o' in literal null (expecting 'u')"}` + "\n" +
				`{"line":6,"error":"record needs \"text\" or \"context\""}` + "\n" +
				`{"line":7,"error":"record needs \"text\" or \"context\""}` + "\n" +
				`{"context":{"messages":[{"role":"user"}]},"error":"tokenizer: chat template: jinja: render error` + "*\n" +
				`{"text":"hello","ids":[14990]}` + "\n"},
		{name: "decode", args: []string{"--decode"}, in: `{"ids":[151644,872,198,6023,151645]}` + "\n" + `{"ids":[999999999]}` + "\n", wantCode: 1,
			wantOut: `{"ids":[151644,872,198,6023,151645],"text":"<|im_start|>user\nhi<|im_end|>"}` + "\n" +
				`{"line":2,"error":"tokenizer: decode: ids[0] = 999999999 is not in the vocabulary (size 151669)"}` + "\n",
			wantErr: "1 input line(s)"},
		{name: "decode skip special", args: []string{"--decode", "--skip-special"}, in: `{"ids":[151644,872,198,6023,151645]}` + "\n",
			wantOut: `{"ids":[151644,872,198,6023,151645],"text":"user\nhi"}` + "\n"},
		{name: "missing tokenizer", args: []string{}, wantCode: 1, wantErr: "--tokenizer DIR is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.name != "missing tokenizer" {
				args = append([]string{"--tokenizer", dir}, args...)
			}
			code, out, errOut := runTokenizeCmd(t, args, c.in)
			require.Equal(t, c.wantCode, code, errOut)
			// A want line ending in '*' matches any line with that prefix.
			wantLines := strings.Split(c.wantOut, "\n")
			gotLines := strings.Split(out, "\n")
			require.Len(t, gotLines, len(wantLines), out)
			for i, w := range wantLines {
				if p, ok := strings.CutSuffix(w, "*"); ok {
					require.True(t, strings.HasPrefix(gotLines[i], p), "line %d: %s", i+1, gotLines[i])
				} else {
					require.Equal(t, w, gotLines[i], "line %d", i+1)
				}
			}
			require.Contains(t, errOut, c.wantErr)
		})
	}
}

func TestTokenizeMissingDir(t *testing.T) {
	code, _, errOut := runTokenizeCmd(t, []string{"--tokenizer", t.TempDir()}, "")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "tokenizer.json")
}
