package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
)

// fieldError is a sample-mapping error about one column.
type fieldError struct {
	column string
	err    error
}

func (e *fieldError) Error() string { return e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

func ferr(column, format string, a ...any) error {
	return &fieldError{column: column, err: fmt.Errorf("%w: "+format, append([]any{ErrFormat}, a...)...)}
}

// SampleFromRow maps one decoded row to a Sample, with verl's layout:
//
//	{"prompt": [messages], "data_source": "...", "agent_name": "...",
//	 "reward_model": {"ground_truth": ...}, "uid": "...",
//	 "extra_info": {"index": 0, "tools_kwargs": {"tool": {"create_kwargs": {...}}},
//	                "interaction_kwargs": {...}, "tool_selection": [...], ...}}
//
// Values are what encoding/json decodes into any (map[string]any, []any,
// string, float64, bool, nil); int64 and json.Number are accepted too.
// The extra_info keys are also read at the top level; the prompt may be a
// JSON string holding the message list. hasIndex reports whether the row
// names its index (otherwise the caller numbers it by position). Of opts,
// PromptKey and ImageKey name the columns, as for a Reader.
func SampleFromRow(row map[string]any, opts Options) (s agentloop.Sample, hasIndex bool, err error) {
	promptKey := opts.PromptKey
	ei, _ := row["extra_info"].(map[string]any)
	if v, ok := row["extra_info"]; ok && v != nil && ei == nil {
		return s, false, ferr("extra_info", "must be an object, got %s", kind(v))
	}
	field := func(key string) (any, string, bool) {
		if v, ok := ei[key]; ok && v != nil {
			return v, "extra_info." + key, true
		}
		v, ok := row[key]
		return v, key, ok && v != nil
	}

	keys := []string{promptKey}
	if promptKey == "" || promptKey == "prompt" {
		keys = []string{"prompt", "raw_prompt", "messages"}
	}
	var prompt any
	col := ""
	for _, k := range keys {
		if v, ok := row[k]; ok && v != nil {
			prompt, col = v, k
			break
		}
	}
	if prompt == nil {
		return s, false, ferr(keys[0], "no prompt column %q (columns: %v)", keys[0], sortedKeys(row))
	}
	if s.Messages, err = messages(prompt, col); err != nil {
		return s, false, err
	}
	imageKey := opts.ImageKey
	if imageKey == "" {
		imageKey = "images"
	}
	if v, ok := row[imageKey]; ok && v != nil {
		if err := attachImages(s.Messages, v, imageKey); err != nil {
			return s, false, err
		}
	}
	if s.DataSource, err = str(row, "data_source"); err != nil {
		return s, false, err
	}
	if s.AgentName, err = str(row, "agent_name"); err != nil {
		return s, false, err
	}
	if v, ok := row["uid"]; ok && v != nil {
		switch x := v.(type) {
		case string:
			s.GroupID = x
		case float64, int64, json.Number:
			s.GroupID = numString(x)
		default:
			return s, false, ferr("uid", "must be a string or a number, got %s", kind(v))
		}
	}
	if v, ok := row["reward_model"]; ok && v != nil {
		rm, ok := v.(map[string]any)
		if !ok {
			return s, false, ferr("reward_model", "must be an object, got %s", kind(v))
		}
		s.GroundTruth = rm["ground_truth"]
	}
	if v, c, ok := field("index"); ok {
		n, ok := integer(v)
		if !ok {
			return s, false, ferr(c, "index must be an integer, got %v", v)
		}
		s.Index, hasIndex = n, true
	}
	if v, c, ok := field("tools_kwargs"); ok {
		tk, ok := v.(map[string]any)
		if !ok {
			return s, false, ferr(c, "must map tool names to objects, got %s", kind(v))
		}
		s.ToolsKwargs = make(map[string]map[string]any, len(tk))
		for name, kw := range tk {
			if kw == nil {
				continue // a struct column for a tool this row does not use
			}
			m, ok := kw.(map[string]any)
			if !ok {
				return s, false, ferr(c+"."+name, "must be an object, got %s", kind(kw))
			}
			ck, has := m["create_kwargs"]
			if !has {
				continue
			}
			cm, ok := ck.(map[string]any)
			if ck != nil && !ok {
				return s, false, ferr(c+"."+name+".create_kwargs", "must be an object, got %s", kind(ck))
			}
			s.ToolsKwargs[name] = dropNulls(cm)
		}
	}
	if v, c, ok := field("interaction_kwargs"); ok {
		m, ok := v.(map[string]any)
		if !ok {
			return s, false, ferr(c, "must be an object, got %s", kind(v))
		}
		s.InteractionKwargs = dropNulls(m)
	}
	if v, c, ok := field("tool_selection"); ok {
		l, ok := v.([]any)
		if !ok {
			return s, false, ferr(c, "must be a list of tool names, got %s", kind(v))
		}
		s.Tools = make([]string, 0, len(l))
		for i, x := range l {
			name, ok := x.(string)
			if !ok {
				return s, false, ferr(fmt.Sprintf("%s[%d]", c, i), "must be a tool name, got %s", kind(x))
			}
			s.Tools = append(s.Tools, name)
		}
	}
	for k, v := range ei {
		switch k {
		case "index", "tools_kwargs", "interaction_kwargs", "tool_selection":
			continue
		}
		if s.Extra == nil {
			s.Extra = make(map[string]any, len(ei))
		}
		s.Extra[k] = v
	}
	return s, hasIndex, nil
}

// dropNulls removes null entries: a Parquet struct has every field of its
// schema in every row, null where a row has none, while the JSON the rows
// came from had no such keys.
func dropNulls(m map[string]any) map[string]any {
	for k, v := range m {
		if v == nil {
			delete(m, k)
		}
	}
	return m
}

func messages(v any, col string) ([]chat.Message, error) {
	if text, ok := v.(string); ok {
		var msgs []chat.Message
		if err := json.Unmarshal([]byte(text), &msgs); err != nil {
			return nil, ferr(col, "a string prompt must hold a JSON list of chat messages: %v", err)
		}
		if len(msgs) == 0 {
			return nil, ferr(col, "prompt has no messages")
		}
		return msgs, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, ferr(col, "must be a list of chat messages, got %s", kind(v))
	}
	if len(l) == 0 {
		return nil, ferr(col, "prompt has no messages")
	}
	out := make([]chat.Message, len(l))
	for i, x := range l {
		at := fmt.Sprintf("%s[%d]", col, i)
		m, ok := x.(map[string]any)
		if !ok {
			return nil, ferr(at, "must be a chat message object, got %s", kind(x))
		}
		msg, err := message(m, at)
		if err != nil {
			return nil, err
		}
		out[i] = msg
	}
	return out, nil
}

// message maps one message object. Plain text messages are mapped field by
// field; messages with tool calls or content parts (rare in prompts) go
// through chat.Message's JSON decoding, which knows those forms.
func message(m map[string]any, at string) (chat.Message, error) {
	if tc, pl := m["tool_calls"], m["content"]; tc != nil || isList(pl) {
		b, err := json.Marshal(m)
		if err != nil {
			return chat.Message{}, ferr(at, "%v", err)
		}
		var msg chat.Message
		if err := json.Unmarshal(b, &msg); err != nil {
			return chat.Message{}, ferr(at, "%v", err)
		}
		return msg, nil
	}
	var msg chat.Message
	for k, v := range m {
		if v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return msg, ferr(at+"."+k, "must be a string, got %s", kind(v))
		}
		switch k {
		case "role":
			msg.Role = s
		case "content":
			msg.Content = s
		case "name":
			msg.Name = s
		case "tool_call_id":
			msg.ToolCallID = s
		case "reasoning_content":
			msg.ReasoningContent = s
		}
	}
	if msg.Role == "" {
		return msg, ferr(at+".role", "a chat message needs a role")
	}
	return msg, nil
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

func str(row map[string]any, key string) (string, error) {
	v, ok := row[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", ferr(key, "must be a string, got %s", kind(v))
	}
	return s, nil
}

func integer(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int(x), true
	case int64:
		return int(x), x >= math.MinInt && x <= math.MaxInt
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return int(n), err == nil
	}
	return 0, false
}

func numString(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case json.Number:
		return string(x)
	}
	return fmt.Sprint(v)
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, int64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// rowError wraps a mapping error with its file and row.
func rowError(file string, row int, err error) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &RowError{File: file, Row: row, Column: fe.column, Err: fe.err}
	}
	return &RowError{File: file, Row: row, Err: err}
}
