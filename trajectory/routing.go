package trajectory

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Routing is a trajectory's mixture-of-experts routing for routing replay
// (R3): for each position of PromptIDs ++ ResponseIDs from 0, each MoE
// layer, the TopK experts the rollout engine's router chose. Engines give
// no row for the last sampled token (it was never run through the model),
// so a trajectory's routing may be one or more rows short of its sequence;
// Collate pads with zeros as verl does.
type Routing struct {
	Layers  int    `json:"layers"`
	TopK    int    `json:"topk"`
	Experts Int16s `json:"experts"` // Rows() × Layers × TopK, row-major
}

// Rows is the number of positions r covers.
func (r *Routing) Rows() int {
	if r == nil || r.Layers <= 0 || r.TopK <= 0 {
		return 0
	}
	return len(r.Experts) / (r.Layers * r.TopK)
}

func (r *Routing) validate(seqLen int) error {
	switch {
	case r.Layers <= 0 || r.TopK <= 0:
		return &FieldError{"routed_experts", -1, fmt.Sprintf("layers %d and topk %d must be > 0", r.Layers, r.TopK)}
	case len(r.Experts)%(r.Layers*r.TopK) != 0:
		return &FieldError{"routed_experts", -1, fmt.Sprintf("%d values are not whole rows of %d layers × %d experts", len(r.Experts), r.Layers, r.TopK)}
	case r.Rows() > seqLen:
		return &FieldError{"routed_experts", -1, fmt.Sprintf("%d positions, the sequence has %d tokens", r.Rows(), seqLen)}
	}
	// Negative ids are kept: SGLang marks positions it did not route
	// with negative sentinels (encode_routed_experts_for_wire).
	return nil
}

// Int16s is a list of int16 values that JSON carries as base64 of their
// little-endian bytes: routing is positions × layers × top-k values per
// trajectory, too many for a list of numbers.
type Int16s []int16

// MarshalJSON implements json.Marshaler.
func (s Int16s) MarshalJSON() ([]byte, error) {
	raw := make([]byte, 2*len(s))
	for i, v := range s {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
	}
	out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(raw))+2)
	out = append(out, '"')
	out = base64.StdEncoding.AppendEncode(out, raw)
	return append(out, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *Int16s) UnmarshalJSON(data []byte) error {
	var b64 string
	if err := json.Unmarshal(data, &b64); err != nil {
		return fmt.Errorf("experts: want a base64 string: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("experts: %w", err)
	}
	if len(raw)%2 != 0 {
		return fmt.Errorf("experts: %d bytes are not whole int16 values", len(raw))
	}
	out := make(Int16s, len(raw)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	*s = out
	return nil
}
