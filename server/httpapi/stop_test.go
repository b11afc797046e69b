package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// scan feeds pieces to a stopScanner and returns the text it handed out
// (with the flush when no stop string matched) and the match.
func scan(stops []string, include bool, pieces ...string) (string, string) {
	s := newStopScanner(stops, include)
	var out strings.Builder
	for _, p := range pieces {
		t, m := s.add(p)
		out.WriteString(t)
		if m {
			return out.String(), s.matched
		}
	}
	out.WriteString(s.flush())
	return out.String(), s.matched
}

// The cases of vLLM's check_stop_strings, as data: the earlier piece is the
// text before the step, the last the text the step appended; want is the
// output text (vLLM's output_text cut to truncate_to).
func TestStopScannerVLLMCases(t *testing.T) {
	for _, c := range []struct {
		name    string // vllm-project/vllm:tests/detokenizer/test_check_stop_strings.py:<test>
		pieces  []string
		stops   []string
		include bool
		match   string
		want    string
	}{
		{"test_earliest_completing_stop_wins_regardless_of_list_order[a,is]", []string{" The user", " is a"}, []string{"a", "is"}, false, "is", " The user "},
		{"test_earliest_completing_stop_wins_regardless_of_list_order[is,a]", []string{" The user", " is a"}, []string{"is", "a"}, false, "is", " The user "},
		{"test_earliest_completing_stop_include_in_output[a,is]", []string{" The user", " is a"}, []string{"a", "is"}, true, "is", " The user is"},
		{"test_earliest_completing_stop_include_in_output[is,a]", []string{" The user", " is a"}, []string{"is", "a"}, true, "is", " The user is"},
		{"test_completion_position_not_start_position", []string{"abc"}, []string{"abc", "b"}, false, "b", "a"},
		{"test_ties_broken_by_list_order[ab,b]", []string{"ab"}, []string{"ab", "b"}, false, "ab", ""},
		{"test_ties_broken_by_list_order[b,ab]", []string{"ab"}, []string{"b", "ab"}, false, "b", "a"},
		{"test_single_stop_in_window_unchanged", []string{"hello world", "."}, []string{"."}, false, ".", "hello world"},
		{"test_single_stop_in_window_unchanged (include)", []string{"hello world", "."}, []string{"."}, true, ".", "hello world."},
		{"test_no_match_and_empty_inputs_return_none", []string{"hello"}, []string{"zzz"}, false, "", "hello"},
		{"test_no_match_and_empty_inputs_return_none (no stops)", []string{"hello"}, nil, false, "", "hello"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, m := scan(c.stops, c.include, c.pieces...)
			require.Equal(t, c.match, m)
			require.Equal(t, c.want, got)
			// The non-streamed cut agrees.
			if m != "" {
				at, which := firstStop(strings.Join(c.pieces, ""), c.stops)
				require.GreaterOrEqual(t, at, 0)
				require.Equal(t, m, which)
				require.Equal(t, c.want, trimAtStop(strings.Join(c.pieces, ""), c.stops, c.include))
			}
		})
	}
}

// Only a tail that may start a stop string is held back: the rest of each
// piece leaves at once.
func TestStopScannerHoldsBackOnlyPossibleStarts(t *testing.T) {
	s := newStopScanner([]string{"</end>", "STOP"}, false)
	for _, step := range []struct{ in, out string }{
		{"Hello ", "Hello "},
		{"wor<", "wor"},  // "<" may start "</end>"
		{"/e", ""},       // "</e" still may
		{"x", "</ex"},    // no longer
		{" ST", " "},     // "ST" may start "STOP"
		{"ART", "START"}, // it did not
		{"S", ""},
	} {
		got, m := s.add(step.in)
		require.False(t, m)
		require.Equal(t, step.out, got, "after %q", step.in)
	}
	got, m := s.add("TOP and more")
	require.True(t, m)
	require.Equal(t, "", got)
	require.Equal(t, "STOP", s.matched)
	require.Equal(t, "", s.flush())
}

// vllm-project/vllm:tests/detokenizer/test_stop_string_while_stop_model_terminates.py:test_stop_string_while_stop_token_terminates
// "abcdeZ" with Z the stop token and stop string "cd": the text is "ab"
// ("abcd" with include_stop_str_in_output). vLLM's test hands the six
// tokens over in one step and keeps them all; taken token by token, as an
// engine samples them, the generation ends at the token completing "cd".
func TestChoiceTextStopStringBeforeStopToken(t *testing.T) {
	s, err := New(fakeEngine{}, Config{Chat: &Chat{Tokenizer: byteTokenizer{}}})
	require.NoError(t, err)
	ids := byteTokenizer{}.Encode("abcdeZ")
	for _, include := range []bool{false, true} {
		c := s.newChoiceText(false, []string{"cd"}, include, true, func(id int32) bool { return id == 'Z' })
		text, kept, matched, err := c.take(ids, nil)
		require.NoError(t, err)
		require.True(t, matched)
		require.Equal(t, 4, kept)
		_, _, rest, out, err := c.end(server.TokenOutput{StopReason: server.StopAbort}, true)
		require.NoError(t, err)
		want := "ab"
		if include {
			want = "abcd"
		}
		require.Equal(t, want, text+rest)
		require.Equal(t, ids[:4], out.TokenIDs)
		require.Equal(t, server.StopEOS, out.StopReason)
	}
}

// A trailing stop token is left out of the text only when it stopped the
// generation.
func TestChoiceTextStopToken(t *testing.T) {
	s, err := New(fakeEngine{}, Config{Chat: &Chat{Tokenizer: byteTokenizer{}}})
	require.NoError(t, err)
	for _, c := range []struct {
		reason server.StopReason
		want   string
	}{{server.StopEOS, "ab"}, {server.StopLength, "abZ"}} {
		ct := s.newChoiceText(false, nil, false, true, func(id int32) bool { return id == 'Z' })
		ids := byteTokenizer{}.Encode("abZ")
		text, kept, matched, err := ct.take(ids[:2], nil)
		require.NoError(t, err)
		require.Equal(t, 2, kept)
		require.False(t, matched)
		more, _, _, err := ct.take(ids[2:], nil)
		require.NoError(t, err)
		require.Equal(t, "", more, "the stop token waits")
		_, _, rest, out, err := ct.end(server.TokenOutput{TokenIDs: ids, StopReason: c.reason}, false)
		require.NoError(t, err)
		require.Equal(t, c.want, text+rest)
		require.Equal(t, ids, out.TokenIDs)
	}
}

// FuzzStopScanner checks the streamed cut against the whole-text one: the
// pieces handed out, concatenated, are the text cut at the stop string
// that completes first (after it with include), and they match the same
// string.
func FuzzStopScanner(f *testing.F) {
	f.Add("Hello world. Bye.", ". ", "o", uint64(3), false)
	f.Add("aaaa", "aa", "a", uint64(1), true)
	f.Add("no stop here", "zz", "", uint64(7), false)
	f.Add("abcabd", "abd", "cab", uint64(2), false)
	f.Fuzz(func(t *testing.T, text, stop1, stop2 string, seed uint64, include bool) {
		var stops []string
		for _, st := range []string{stop1, stop2} {
			if st != "" {
				stops = append(stops, st)
			}
		}
		var pieces []string
		for rest := text; rest != ""; {
			n := 1 + int(seed%5)
			seed = seed*6364136223846793005 + 1442695040888963407
			n = min(n, len(rest))
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		got, m := scan(stops, include, pieces...)
		at, which := firstStop(text, stops)
		if at < 0 {
			require.Equal(t, "", m)
			require.Equal(t, text, got)
			return
		}
		require.Equal(t, which, m)
		require.Equal(t, trimAtStop(text, stops, include), got)
	})
}
