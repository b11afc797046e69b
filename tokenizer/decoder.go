package tokenizer

import (
	"fmt"
)

// Decoder turns a growing stream of token ids into text, one piece per Add,
// without ever splitting a UTF-8 character: bytes of a character that
// spans tokens are held back until it is complete. The concatenation of
// everything Add and Flush return equals Decode of the whole stream.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	t           *Tokenizer
	skipSpecial bool
	pending     []byte
	first       bool
}

// NewDecoder returns an incremental decoder; skipSpecial drops special
// tokens as Decode does.
func (t *Tokenizer) NewDecoder(skipSpecial bool) *Decoder {
	return &Decoder{t: t, skipSpecial: skipSpecial, first: true}
}

// Add decodes ids and returns the text that is now complete. An id outside
// the vocabulary is an error naming it; the decoder is unchanged then.
func (d *Decoder) Add(ids ...int32) (string, error) {
	t := d.t
	for i, id := range ids {
		if _, ok := t.Token(id); !ok {
			return "", fmt.Errorf("tokenizer: decode: ids[%d] = %d is not in the vocabulary (size %d)", i, id, t.VocabSize())
		}
	}
	for _, id := range ids {
		if d.skipSpecial && t.special[id] {
			continue
		}
		if !t.decodeByteLevel && !d.first {
			d.pending = append(d.pending, ' ')
		}
		d.first = false
		d.pending = append(d.pending, t.decBytes[t.decOff[id]:t.decOff[id+1]]...)
	}
	keep := incompleteTail(d.pending)
	ready := d.pending[:len(d.pending)-keep]
	out := string(appendLossy(nil, ready))
	d.pending = append(d.pending[:0], d.pending[len(d.pending)-keep:]...)
	return out, nil
}

// Flush returns the held-back bytes of an unfinished character (as U+FFFD,
// like Decode) and resets the decoder for a new stream.
func (d *Decoder) Flush() string {
	out := string(appendLossy(nil, d.pending))
	d.pending = d.pending[:0]
	d.first = true
	return out
}
