package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// A call record is most of what capture writes per call, and encoding it
// with json.Marshal costs as much as its sync: encoding/json validates
// and compacts again every byte a MarshalJSON method returns — each
// message of the conversation, the answer, the times — and walks the
// token arrays by reflection. appendCall writes the same JSON (the same
// fields, in CallRecord's order, decoded by DecodeRecord to the same
// record; TestEncodeCallAgreesWithMarshal checks it) directly: messages
// through chat.Message's own encoder, which is compact by construction
// and is checked here only for a newline (one would end the JSONL line),
// token ids and logprobs with strconv. Only the request as received is
// compacted, as it must be: it is the client's text.

// marshalRecord is r as one JSON line's text (no newline).
func marshalRecord(r *Record) ([]byte, error) {
	if r.Kind != KindCall || r.Call == nil || r.Rollout != nil || r.CallID != "" || r.Reason != "" || r.Reward != nil {
		return json.Marshal(r)
	}
	b := make([]byte, 0, 4096)
	b = append(b, `{"kind":"call","time":`...)
	b, err := appendTime(b, r.Time)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"call":`...)
	if b, err = appendCall(b, r.Call); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendCall(b []byte, c *CallRecord) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, c.ID)
	b = append(b, `,"dialect":`...)
	b = appendString(b, c.Dialect)
	b = append(b, `,"request":`...)
	if len(c.Request) == 0 {
		b = append(b, "null"...)
	} else {
		var buf bytes.Buffer
		buf.Grow(len(c.Request))
		if err := json.Compact(&buf, c.Request); err != nil {
			return nil, fmt.Errorf("capture: call %s: the request is not JSON: %w", c.ID, err)
		}
		b = append(b, buf.Bytes()...)
	}
	if len(c.Header) > 0 {
		if b, err = appendJSON(b, `,"header":`, c.Header); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"messages":`...)
	if c.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range c.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			mb, err := m.MarshalJSON()
			if err != nil {
				return nil, fmt.Errorf("capture: call %s: messages[%d]: %w", c.ID, i, err)
			}
			if bytes.IndexByte(mb, '\n') >= 0 {
				return nil, fmt.Errorf("capture: call %s: messages[%d] encodes with a newline", c.ID, i)
			}
			b = append(b, mb...)
		}
		b = append(b, ']')
	}
	if len(c.Tools) > 0 {
		if b, err = appendJSON(b, `,"tools":`, c.Tools); err != nil {
			return nil, err
		}
	}
	if len(c.TemplateKwargs) > 0 {
		if b, err = appendJSON(b, `,"template_kwargs":`, c.TemplateKwargs); err != nil {
			return nil, err
		}
	}
	if c.Parent != "" {
		b = append(b, `,"parent":`...)
		b = appendString(b, c.Parent)
	}
	if c.Segment != "" {
		b = append(b, `,"segment":`...)
		b = appendString(b, c.Segment)
	}
	if len(c.PromptIDs) > 0 {
		b = appendIDs(append(b, `,"prompt_ids":`...), c.PromptIDs)
	}
	if len(c.DeltaIDs) > 0 {
		b = appendIDs(append(b, `,"delta_ids":`...), c.DeltaIDs)
	}
	b = append(b, `,"sampled_ids":`...)
	if c.SampledIDs == nil {
		b = append(b, "null"...)
	} else {
		b = appendIDs(b, c.SampledIDs)
	}
	if len(c.Logprobs) > 0 {
		b = append(b, `,"logprobs":[`...)
		for i, lp := range c.Logprobs {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendFloat32(b, lp); err != nil {
				return nil, fmt.Errorf("capture: call %s: logprobs[%d]: %w", c.ID, i, err)
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"stop_reason":`...)
	b = appendString(b, c.StopReason)
	b = append(b, `,"weight_version":`...)
	b = strconv.AppendInt(b, c.WeightVersion, 10)
	if c.Sampling != nil {
		if b, err = appendJSON(b, `,"sampling":`, c.Sampling); err != nil {
			return nil, err
		}
	}
	ab, err := c.Answer.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("capture: call %s: answer: %w", c.ID, err)
	}
	if bytes.IndexByte(ab, '\n') >= 0 {
		return nil, fmt.Errorf("capture: call %s: the answer encodes with a newline", c.ID)
	}
	b = append(append(b, `,"answer":`...), ab...)
	for _, t := range []struct {
		key string
		t   time.Time
	}{{`,"received":`, c.Received}, {`,"dispatched":`, c.Dispatched}, {`,"recorded":`, c.Recorded}} {
		if b, err = appendTime(append(b, t.key...), t.t); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendJSON appends key and v encoded by encoding/json (the small,
// rare fields).
func appendJSON(b []byte, key string, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("capture: encoding %s: %w", key, err)
	}
	return append(append(b, key...), j...), nil
}

// appendString appends s as encoding/json writes it (HTML-escaped too,
// so the bytes are Marshal's).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // never fails for a string
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendIDs(b []byte, ids []int32) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']')
}

var errNonFinite = errors.New("not a finite number")

// appendFloat32 appends f as encoding/json does: the shortest decimal
// that reads back as the same float32, 'e' form outside [1e-6, 1e21).
func appendFloat32(b []byte, f float32) ([]byte, error) {
	v := float64(f)
	if v != v || v > 3.5e38 || v < -3.5e38 {
		return nil, errNonFinite
	}
	abs := v
	if abs < 0 {
		abs = -abs
	}
	format := byte('f')
	if abs != 0 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 32)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

func appendTime(b []byte, t time.Time) ([]byte, error) {
	tb, err := t.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("capture: encoding a time: %w", err)
	}
	return append(b, tb...), nil
}
