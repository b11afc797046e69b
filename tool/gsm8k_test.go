package tool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

func TestExtractAnswer(t *testing.T) {
	tests := []struct {
		text   string
		strict bool
		want   string
		ok     bool
	}{
		{"She has 3 apples.\n#### 42", true, "42", true},
		{"#### 1,234", true, "1234", true},
		{"#### $1,234.50", true, "1234.50", true},
		{"#### -7", true, "-7", true},
		{"first #### 5 then #### 6", true, "6", true},
		{"#### 5 then #### oops", true, "5", true}, // a later marker without a number is skipped
		{"The answer is 42", true, "", false},
		{"The answer is 42.", false, "42", true},
		{"It costs 1,000 dollars, so 1,250 total", false, "1250", true},
		{"from 3 to -4", false, "-4", true},
		{"x = 3, y = 4.", false, "4", true},
		{"answer: 12 and then ,", false, "12", true},
		{"no digits here", false, "", false},
		{"version 1.2.3 and 7", false, "7", true},
		{"version 1.2.3", false, "", false},
		{"我有 5 个苹果，答案是 8。", false, "8", true},
		{"", false, "", false},
	}
	for _, tc := range tests {
		got, ok := ExtractAnswer(tc.text, tc.strict)
		require.Equal(t, tc.ok, ok, "%q", tc.text)
		require.Equal(t, tc.want, got, "%q", tc.text)
	}
}

func TestScoreAnswer(t *testing.T) {
	require.Equal(t, 1.0, ScoreAnswer("42", "42"))
	require.Equal(t, 1.0, ScoreAnswer("42.0", "42"))
	require.Equal(t, 1.0, ScoreAnswer("1,000", "1000"))
	require.Equal(t, 1.0, ScoreAnswer(" -3.50 ", "-3.5"))
	require.Equal(t, 0.0, ScoreAnswer("41", "42"))
	require.Equal(t, 0.0, ScoreAnswer("", "42"))
	require.Equal(t, 0.0, ScoreAnswer("forty-two", "42"))
}

// TestExtractAnswerMatchesVerlRegex checks the candidates against Python's
// re with verl's patterns on texts where verl's extra rules (300-character
// clip, commas and trailing dots kept in flexible mode) do not apply.
func TestExtractAnswerMatchesVerlRegex(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	texts := []string{
		"Natalia sold 48/2 = 24 clips in May.\n#### 72",
		"Weng earns 12/60 = $0.2 per minute. #### 10",
		"so -5 + 3 = -2\n#### -2",
		"first 5, later 17 and finally 23 apples",
		"#### 5 and #### 9",
		"the result is 3.25",
		"no answer here at all",
		"the temperature fell to -15 overnight",
	}
	script := `
import json, re, sys
out = []
for s in json.load(sys.stdin):
    strict = re.findall("#### (\\-?[0-9\\.\\,]+)", s)
    flex = [c for c in re.findall("(\\-?[0-9\\.\\,]+)", s) if c not in ("", ".")]
    out.append([strict[-1] if strict else None, flex[-1] if flex else None])
json.dump(out, sys.stdout)
`
	in, _ := json.Marshal(texts)
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var want [][2]*string
	require.NoError(t, json.Unmarshal(out, &want))
	for i, s := range texts {
		for mode, strict := range []bool{true, false} {
			got, ok := ExtractAnswer(s, strict)
			if want[i][mode] == nil {
				require.False(t, ok, "%q strict=%v", s, strict)
				continue
			}
			require.True(t, ok, "%q strict=%v", s, strict)
			require.Equal(t, *want[i][mode], got, "%q strict=%v", s, strict)
		}
	}
}

func TestGSM8KTool(t *testing.T) {
	ctx := context.Background()
	g := NewGSM8K(chat.ToolSchema{})
	s, err := NewSet(g)
	require.NoError(t, err)
	ss := s.Session(map[string]map[string]any{"calc_gsm8k_reward": {"ground_truth": "72"}})
	defer func() { require.NoError(t, ss.Close(ctx)) }()

	steps := []struct {
		args, text string
		reward     float64
		score      float64
	}{
		{`{"answer": "70"}`, "Current parsed answer='70' reward=0.0", GSM8KPenalty, 0},
		{`{"answer": "72"}`, "Current parsed answer='72' reward=1.0", 0, 1},
		{`{"answer": "#### 72"}`, "Current parsed answer='#### 72' reward=1.0", GSM8KPenalty, 1},
		{`{"answer": "it's 7,2"}`, `Current parsed answer="it's 7,2" reward=1.0`, GSM8KPenalty, 1},
	}
	for _, st := range steps {
		r := ss.Call(ctx, call("calc_gsm8k_reward", st.args))
		require.NoError(t, r.Err)
		require.Equal(t, st.text, r.Text)
		require.Equal(t, st.reward, r.Reward)
		require.Equal(t, map[string]float64{"score": st.score}, r.Metrics)
	}
	r := ss.Call(ctx, call("calc_gsm8k_reward", `{"answer": 72}`))
	require.ErrorIs(t, r.Err, ErrInvalidArguments)

	// Missing ground truth is an error the agent loop sees.
	ss2 := s.Session(nil)
	r = ss2.Call(ctx, call("calc_gsm8k_reward", `{"answer": "1"}`))
	require.ErrorIs(t, r.Err, ErrExecution)
	require.Contains(t, r.Text, `create kwargs have no "ground_truth"`)
	require.NoError(t, ss2.Close(ctx))

	// Numeric ground truths from JSON work too.
	ss3 := s.Session(map[string]map[string]any{"calc_gsm8k_reward": {"ground_truth": 18.0}})
	r = ss3.Call(ctx, call("calc_gsm8k_reward", `{"answer": "18"}`))
	require.Equal(t, 1.0, r.Metrics["score"])
	require.NoError(t, ss3.Close(ctx))
}

func FuzzExtractAnswer(f *testing.F) {
	for _, s := range []string{"#### 42", "a 1,2.3. b", "-", "#### $-5", "1.2.3", "####", "...,,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, strict := range []bool{true, false} {
			got, ok := ExtractAnswer(s, strict)
			if !ok {
				continue
			}
			if _, valid := parseDecimal(got); !valid {
				t.Fatalf("extracted %q from %q is not a number", got, s)
			}
			if ScoreAnswer(got, got) != 1 {
				t.Fatalf("answer %q does not match itself", got)
			}
		}
	})
}
