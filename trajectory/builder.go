package trajectory

import (
	"errors"
	"fmt"
	"math"
)

// ErrLogprobs is returned when model segments disagree about logprobs: some
// segments carry them and some do not, or a segment's logprobs do not match
// its tokens.
var ErrLogprobs = errors.New("trajectory: inconsistent logprobs")

// Builder assembles a response from segments. It is the only way agentrl
// writes a response mask: model segments get mask 1 and their logprobs,
// observation segments get mask 0 and logprob 0. A Builder is not safe for
// concurrent use.
type Builder struct {
	prompt   []int32
	ids      []int32
	mask     []int8
	logprobs []float32
	// lpMode: 0 = no model segment yet, 1 = segments carry logprobs, 2 = they do not.
	lpMode int8
}

// NewBuilder starts a trajectory with the given prompt ids. The slice is
// copied.
func NewBuilder(promptIDs []int32) *Builder {
	return &Builder{prompt: append([]int32(nil), promptIDs...)}
}

// AppendModel appends tokens the policy sampled (mask 1). logprobs must be
// nil or aligned with ids; every model segment of a trajectory must agree on
// whether logprobs are present.
func (b *Builder) AppendModel(ids []int32, logprobs []float32) error {
	if logprobs != nil && len(logprobs) != len(ids) {
		return fmt.Errorf("%w: %d logprobs for %d tokens", ErrLogprobs, len(logprobs), len(ids))
	}
	if len(ids) == 0 {
		return nil
	}
	mode := int8(2)
	if logprobs != nil {
		mode = 1
	}
	switch {
	case b.lpMode == 0:
		b.lpMode = mode
		if mode == 1 {
			// Earlier observation tokens get logprob 0.
			b.logprobs = make([]float32, len(b.ids), cap(b.ids))
		}
	case b.lpMode != mode:
		return fmt.Errorf("%w: a segment %s logprobs after segments %s them", ErrLogprobs, hasWord(mode), hasWord(b.lpMode))
	}
	for i, lp := range logprobs {
		if math.IsNaN(float64(lp)) || math.IsInf(float64(lp), 0) {
			return fmt.Errorf("%w: logprob %d of the segment is %v", ErrLogprobs, i, lp)
		}
	}
	for _, id := range ids {
		if id < 0 {
			return fmt.Errorf("%w: negative token id %d", ErrInvalid, id)
		}
	}
	b.ids = append(b.ids, ids...)
	for range ids {
		b.mask = append(b.mask, 1)
	}
	if mode == 1 {
		b.logprobs = append(b.logprobs, logprobs...)
	}
	return nil
}

func hasWord(mode int8) string {
	if mode == 1 {
		return "with"
	}
	return "without"
}

// AppendObservation appends tokens the policy did not sample: tool results,
// user or interaction turns, template glue (mask 0, logprob 0).
func (b *Builder) AppendObservation(ids []int32) error {
	for _, id := range ids {
		if id < 0 {
			return fmt.Errorf("%w: negative token id %d", ErrInvalid, id)
		}
	}
	b.ids = append(b.ids, ids...)
	for range ids {
		b.mask = append(b.mask, 0)
	}
	if b.lpMode == 1 {
		for range ids {
			b.logprobs = append(b.logprobs, 0)
		}
	}
	return nil
}

// Len is the current response length.
func (b *Builder) Len() int { return len(b.ids) }

// PromptLen is the prompt length.
func (b *Builder) PromptLen() int { return len(b.prompt) }

// Sequence returns prompt ++ response: what the engine must see next. The
// result is a new slice.
func (b *Builder) Sequence() []int32 {
	out := make([]int32, 0, len(b.prompt)+len(b.ids))
	out = append(out, b.prompt...)
	return append(out, b.ids...)
}

// Build returns the trajectory with copies of the token data; the Builder can
// keep growing afterwards without affecting it.
func (b *Builder) Build() *Trajectory {
	t := &Trajectory{
		PromptIDs:    append([]int32(nil), b.prompt...),
		ResponseIDs:  append(make([]int32, 0, len(b.ids)), b.ids...),
		ResponseMask: append(make([]int8, 0, len(b.mask)), b.mask...),
	}
	if b.lpMode == 1 {
		t.Logprobs = append(make([]float32, 0, len(b.logprobs)), b.logprobs...)
	}
	return t
}
