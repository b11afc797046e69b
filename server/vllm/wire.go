package vllm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentrl/agentrl/server/internal/wire"
)

// The logprob entries are scanned by hand: one object per output token,
// decoded through reflection they were the largest cost of a loopback round
// trip. The input has already been checked to be valid JSON by the
// enclosing decode; keys match case-insensitively, like encoding/json.

// lpEntry is one logprobs.content element.
type lpEntry struct {
	logprob    float64
	hasLogprob bool
	tokenID    int64
	hasTokenID bool
	token      string
	hasToken   bool
}

// scanLogprobContent reads choices[i].logprobs: {"content": [entry...]} or
// a bare list of entries.
func scanLogprobContent(data []byte) ([]lpEntry, error) {
	i := wire.SkipSpace(data, 0)
	if i < len(data) && data[i] == '{' {
		var content []byte
		if _, err := scanObject(data, i, func(key []byte, v int) (int, error) {
			end := skipValue(data, v)
			if bytes.EqualFold(key, []byte("content")) {
				content = data[v:end]
			}
			return end, nil
		}); err != nil {
			return nil, err
		}
		if content == nil || string(content) == "null" {
			return nil, errors.New(`expected {"content": [...]}`)
		}
		data, i = content, 0
	}
	if i >= len(data) || data[i] != '[' {
		return nil, errors.New(`expected {"content": [...]} or a list of entries`)
	}
	entries := make([]lpEntry, 0, bytes.Count(data, []byte("logprob")))
	i = wire.SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return entries, nil
	}
	for n := 0; ; n++ {
		i = wire.SkipSpace(data, i)
		if i >= len(data) || data[i] != '{' {
			return nil, fmt.Errorf("content[%d]: expected an object", n)
		}
		var e lpEntry
		end, err := scanObject(data, i, func(key []byte, v int) (int, error) {
			end := skipValue(data, v)
			val := data[v:end]
			null := string(val) == "null"
			switch {
			case bytes.EqualFold(key, []byte("logprob")):
				if null {
					e.hasLogprob = false
					return end, nil
				}
				f, err := strconv.ParseFloat(string(val), 64)
				if err != nil {
					return 0, fmt.Errorf("content[%d].logprob: %.40s is not a number", n, val)
				}
				e.logprob, e.hasLogprob = f, true
			case bytes.EqualFold(key, []byte("token_id")):
				if null {
					e.hasTokenID = false
					return end, nil
				}
				id, err := strconv.ParseInt(string(val), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("content[%d].token_id: %.40s is not an integer", n, val)
				}
				e.tokenID, e.hasTokenID = id, true
			case bytes.EqualFold(key, []byte("token")):
				if null {
					e.hasToken = false
					return end, nil
				}
				if val[0] != '"' {
					return 0, fmt.Errorf("content[%d].token: not a string", n)
				}
				if bytes.IndexByte(val, '\\') < 0 {
					e.token = string(val[1 : len(val)-1])
				} else if err := json.Unmarshal(val, &e.token); err != nil {
					return 0, fmt.Errorf("content[%d].token: %v", n, err)
				}
				e.hasToken = true
			}
			return end, nil
		})
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
		i = wire.SkipSpace(data, end)
		if i >= len(data) {
			return nil, errors.New("unterminated list")
		}
		switch data[i] {
		case ',':
			i++
		case ']':
			return entries, nil
		default:
			return nil, fmt.Errorf("content[%d]: unexpected %q", n, data[i])
		}
	}
}

// scanObject calls field for each member of the object at data[i] with the
// key (unescaped) and the offset of its value; field returns the value's
// end. scanObject returns the offset after the closing brace.
func scanObject(data []byte, i int, field func(key []byte, v int) (int, error)) (int, error) {
	i = wire.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		i = wire.SkipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return 0, errors.New("expected an object key")
		}
		end := skipValue(data, i)
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if err := json.Unmarshal(data[i:end], &k); err != nil {
				return 0, err
			}
			key = []byte(k)
		}
		i = wire.SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, errors.New("expected ':' after an object key")
		}
		var err error
		if i, err = field(key, wire.SkipSpace(data, i+1)); err != nil {
			return 0, err
		}
		i = wire.SkipSpace(data, i)
		if i >= len(data) {
			return 0, errors.New("unterminated object")
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i + 1, nil
		default:
			return 0, fmt.Errorf("unexpected %q in an object", data[i])
		}
	}
}

// skipValue returns the end of the (valid) JSON value starting at i.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		i++
		for i < len(data) && data[i] != '"' {
			if data[i] == '\\' {
				i++
			}
			i++
		}
		return i + 1
	case '[', '{':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = skipValue(data, i)
				continue
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(data) {
		switch data[i] {
		case ',', ']', '}', ' ', '\n', '\t', '\r':
			return i
		}
		i++
	}
	return i
}
