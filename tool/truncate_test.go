package tool

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		side Side
		want string
	}{
		{"abcdefghij", 4, TruncateRight, "abcd...(truncated)"},
		{"abcdefghij", 4, TruncateLeft, "(truncated)...ghij"},
		{"abcdefghij", 4, TruncateMiddle, "ab...(truncated)...ij"},
		{"abcdefghij", 5, TruncateMiddle, "ab...(truncated)...ij"}, // odd max keeps max-1
		{"abcdefghij", 10, TruncateLeft, "abcdefghij"},
		{"abcdefghij", 0, TruncateLeft, "abcdefghij"},   // 0 = no limit
		{"abcdefghij", -3, TruncateRight, "abcdefghij"}, // negative = no limit
		{"abcdefghij", 1, TruncateMiddle, "...(truncated)..."},
		{"héllo wörld", 3, TruncateRight, "hél...(truncated)"},
		{"你好世界，工具", 2, TruncateLeft, "(truncated)...工具"},
		{"你好世界，工具", 4, TruncateMiddle, "你好...(truncated)...工具"},
		{"🙂🙃🙂🙃", 3, TruncateRight, "🙂🙃🙂...(truncated)"},
		{"ab\xffcd", 3, TruncateRight, "ab\xff...(truncated)"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, Truncate(tc.s, tc.max, tc.side), "%q %d %v", tc.s, tc.max, tc.side)
	}
}

func TestParseSide(t *testing.T) {
	for _, s := range []Side{TruncateLeft, TruncateRight, TruncateMiddle} {
		got, err := ParseSide(s.String())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	_, err := ParseSide("both")
	require.ErrorContains(t, err, `got "both"`)
}

// TestTruncateMatchesPython applies verl's slicing rules with Python string
// semantics (len and slices count code points) and compares.
func TestTruncateMatchesPython(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	texts := []string{"abcdefghijklmnopqrstuvwxyz", "你好世界，这是一个工具的输出结果。", "mixed ascii 和 中文 and emoji 🙂🙃 end", strings.Repeat("xyz", 40)}
	maxes := []int{2, 3, 7, 10, 25, 200}
	sides := []Side{TruncateLeft, TruncateRight, TruncateMiddle}
	type job struct {
		Text string `json:"text"`
		Max  int    `json:"max"`
		Side string `json:"side"`
	}
	var jobs []job
	for _, s := range texts {
		for _, m := range maxes {
			for _, sd := range sides {
				jobs = append(jobs, job{s, m, sd.String()})
			}
		}
	}
	in, err := json.Marshal(jobs)
	require.NoError(t, err)
	script := `
import json, sys
out = []
for j in json.load(sys.stdin):
    s, n, side = j["text"], j["max"], j["side"]
    if len(s) > n:
        if side == "left":  # verl after PR #6313: left cuts the start
            s = "(truncated)..." + s[-n:]
        elif side == "right":
            s = s[:n] + "...(truncated)"
        else:
            h = n // 2
            s = s[:h] + "...(truncated)..." + s[-h:]
    out.append(s)
json.dump(out, sys.stdout)
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var want []string
	require.NoError(t, json.Unmarshal(out, &want))
	for i, j := range jobs {
		side, err := ParseSide(j.Side)
		require.NoError(t, err)
		require.Equal(t, want[i], Truncate(j.Text, j.Max, side), "%+v", j)
	}
}
