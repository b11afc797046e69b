package httpapi

import (
	"encoding/json"
	"strings"

	"github.com/agentrl/agentrl/server"
)

// maxStopStrings bounds the stop list (OpenAI allows 4; vLLM any number):
// every one is searched for in the output.
const maxStopStrings = 16

// takeStopStrings reads OpenAI's "stop" (a string or a list of strings)
// and clears it from k, so that the knobs' own check, which refuses stop
// strings where no tokenizer is at hand, lets the request through.
func (k *samplingKnobs) takeStopStrings(field string) ([]string, error) {
	raw := k.Stop
	k.Stop = nil
	if !isSet(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("field %q: expected a string or a list of strings", field)
	}
	if len(many) > maxStopStrings {
		return nil, badRequest("field %q: at most %d stop strings, got %d", field, maxStopStrings, len(many))
	}
	out := many[:0]
	for _, s := range many {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// firstStop returns where the stop string that completes earliest in text
// starts, and which one it is, or -1. Ties go to the earlier string of the
// list: the match a check after every appended token would find first, as
// vLLM's check_stop_strings picks it (vllm-project/vllm
// vllm/v1/engine/detokenizer.py, tests/detokenizer/test_check_stop_strings.py).
func firstStop(text string, stops []string) (int, string) {
	return stopFrom(text, 0, stops)
}

// stopFrom is firstStop over the matches that end after byte from: a
// caller that already searched text[:from] finds only the new ones.
func stopFrom(text string, from int, stops []string) (int, string) {
	at, end, which := -1, 0, ""
	for _, s := range stops {
		lo := max(0, from-len(s)+1)
		i := strings.Index(text[lo:], s)
		if i < 0 {
			continue
		}
		i += lo
		if at < 0 || i+len(s) < end {
			at, end, which = i, i+len(s), s
		}
	}
	return at, which
}

// cutAtStopString ends out at the token that completes the first stop
// string in its text, as vLLM's stop checker does (it checks after every
// token and ends the request there). The engine has already generated to a
// token stop or the length limit, so the tokens past the cut are dropped;
// the request's tokens, logprobs and finish reason are then those of a run
// that stopped there. It returns the stop string, or "" if none occurs.
func (s *Server) cutAtStopString(out *server.TokenOutput, stops []string, skipSpecial bool) (string, error) {
	if len(stops) == 0 || s.cfg.Chat == nil || len(out.TokenIDs) == 0 {
		return "", nil
	}
	text, err := s.cfg.Chat.Tokenizer.Decode(out.TokenIDs, skipSpecial)
	if err != nil {
		return "", err
	}
	if at, _ := firstStop(text, stops); at < 0 {
		return "", nil
	}
	// The shortest prefix of tokens whose text holds the stop string. Each
	// decode is of a prefix, so text that a later token would change (an
	// incomplete UTF-8 sequence) is never matched early.
	lo, hi := 1, len(out.TokenIDs)
	for lo < hi {
		mid := (lo + hi) / 2
		t, err := s.cfg.Chat.Tokenizer.Decode(out.TokenIDs[:mid], skipSpecial)
		if err != nil {
			return "", err
		}
		if i, _ := firstStop(t, stops); i >= 0 {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	out.TokenIDs = out.TokenIDs[:lo]
	if out.Logprobs != nil {
		out.Logprobs = out.Logprobs[:lo]
	}
	if out.TopLogprobs != nil {
		out.TopLogprobs = out.TopLogprobs[:lo]
	}
	out.StopReason = server.StopEOS
	// The string the kept text completes first: decoding is not always
	// prefix-stable (a character completed by a later token).
	kept, err := s.cfg.Chat.Tokenizer.Decode(out.TokenIDs, skipSpecial)
	if err != nil {
		return "", err
	}
	_, which := firstStop(kept, stops)
	return which, nil
}

// trimAtStop cuts text before the first stop string (after it when
// include is set).
func trimAtStop(text string, stops []string, include bool) string {
	at, which := firstStop(text, stops)
	if at < 0 {
		return text
	}
	if include {
		return text[:at+len(which)]
	}
	return text[:at]
}

// stopStrings takes the request's stop strings, which need the tokenizer.
func (s *Server) stopStrings(k *samplingKnobs) ([]string, error) {
	return s.stopStringsField(k, "stop")
}

// stopStringsField is stopStrings for a dialect that names the field
// otherwise (Messages: stop_sequences).
func (s *Server) stopStringsField(k *samplingKnobs, field string) ([]string, error) {
	stops, err := k.takeStopStrings(field)
	if err == nil && len(stops) > 0 && s.cfg.Chat == nil {
		err = badRequest(`field %q: stop strings need a tokenizer, and this server has none (use stop_token_ids)`, field)
	}
	return stops, err
}

// stopScanner applies stop strings to text as it is decoded, for streams:
// add takes each decoded piece and hands out the text that can no longer
// be cut. Without include, a tail of the text that is a proper prefix of a
// stop string is held back, since the next piece may complete the stop
// string and the text must then end before it; everything else leaves at
// once. (vLLM's incremental detokenizer holds back a fixed
// max(len(stop))-1 characters, vllm-project/vllm
// vllm/v1/engine/detokenizer.py@001999d2f360c2c5da23a916510c273b1a73d06c
// IncrementalDetokenizer.get_next_output_text; holding back only a
// possible start releases the same text, sooner.) With include, the text
// ends after the stop string, so nothing before it can be cut.
//
// Each stop string has a Knuth-Morris-Pratt automaton whose state is the
// longest prefix of it that the text ends with: the state after each byte
// says both whether the string completed there and how much to hold
// back, in time linear in the text whatever the strings are.
type stopScanner struct {
	stops    []string
	fail     [][]int // KMP failure function of each stop string
	state    []int
	include  bool
	text     strings.Builder
	released int    // bytes of text handed out
	matched  string // the stop string, once one matched
}

func newStopScanner(stops []string, include bool) *stopScanner {
	s := &stopScanner{stops: stops, include: include, fail: make([][]int, len(stops)), state: make([]int, len(stops))}
	for i, st := range stops {
		f := make([]int, len(st))
		for j, k := 1, 0; j < len(st); j++ {
			for k > 0 && st[j] != st[k] {
				k = f[k-1]
			}
			if st[j] == st[k] {
				k++
			}
			f[j] = k
		}
		s.fail[i] = f
	}
	return s
}

// add appends piece and returns the text that became final; matched
// reports that a stop string completed (the text ends at it, or after it
// with include, and nothing more is added). The string that completes at
// the earliest byte wins, ties going to the earlier one of the list, as
// in vLLM's check_stop_strings.
func (s *stopScanner) add(piece string) (out string, matched bool) {
	if s.matched != "" {
		return "", true
	}
	for b := 0; b < len(piece); b++ {
		c := piece[b]
		for i, st := range s.stops {
			k := s.state[i]
			for k > 0 && st[k] != c {
				k = s.fail[i][k-1]
			}
			if st[k] == c {
				k++
			}
			s.state[i] = k
			if k == len(st) && s.matched == "" {
				s.matched = st
			}
		}
		if s.matched != "" {
			end := s.text.Len() + b + 1 // just after the stop string
			s.text.WriteString(piece[:b+1])
			if !s.include {
				end -= len(s.matched)
			}
			text := s.text.String()
			out = text[min(s.released, end):end]
			s.released = end
			return out, true
		}
	}
	s.text.WriteString(piece)
	end := s.text.Len()
	if !s.include {
		held := 0
		for _, k := range s.state {
			held = max(held, k)
		}
		end -= held
	}
	if end <= s.released {
		return "", false
	}
	out = s.text.String()[s.released:end]
	s.released = end
	return out, false
}

// flush hands out what add held back: the generation ended without a
// stop string completing.
func (s *stopScanner) flush() string {
	if s.matched != "" {
		return ""
	}
	text := s.text.String()
	out := text[s.released:]
	s.released = len(text)
	return out
}
