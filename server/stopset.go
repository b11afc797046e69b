package server

// MaxStopTokenIDs caps SamplingParams.StopTokenIDs where the vocabulary is
// unknown (where it is known, the vocabulary's size caps it: a longer list
// repeats ids or names ids no model can sample). 2^18 is the size of the
// largest vocabularies served (Gemma 3's 262,144). A request's stop list is
// checked after every sampled token, so its length is work multiplied by
// the whole generation: 8 M ids once made a 4,000-token request take 47 s
// instead of 20 s and slowed the requests beside it eight times.
const MaxStopTokenIDs = 1 << 18

// fewStops is the longest stop list kept as a list: scanning up to this
// many ids costs no more than a set's lookup.
const fewStops = 8

// bitmapIDs bounds the ids a StopSet keeps in a bitmap (128 KB at most);
// a list with a larger id uses a map, so that one large id cannot make a
// request allocate 2^31 bits.
const bitmapIDs = 1 << 20

// StopSet is a set of stop token ids, built once per request and looked up
// after every sampled token in constant time, whatever the list's length:
// a list of up to 8 ids is scanned, a longer one becomes a bitmap (ids
// below 2^20, the vocabularies served) or a map. The zero value is empty.
type StopSet struct {
	few  []int32
	bits []uint64
	set  map[int32]struct{}
}

// NewStopSet returns the set of ids; ids is not retained.
func NewStopSet(ids []int32) StopSet {
	if len(ids) <= fewStops {
		return StopSet{few: append([]int32(nil), ids...)}
	}
	top := int32(-1)
	for _, id := range ids {
		top = max(top, id)
	}
	if top < bitmapIDs {
		bits := make([]uint64, top/64+1)
		for _, id := range ids {
			if id >= 0 {
				bits[id/64] |= 1 << (id % 64)
			}
		}
		return StopSet{bits: bits}
	}
	set := make(map[int32]struct{}, len(ids))
	for _, id := range ids {
		set[id] = struct{}{}
	}
	return StopSet{set: set}
}

// Has reports whether id is in the set.
func (s StopSet) Has(id int32) bool {
	found, _ := s.lookup(id)
	return found
}

// lookup is Has that also returns how many list elements it compared id
// with: at most fewStops, whatever the list's length (the tests' count of
// the work a lookup does).
func (s StopSet) lookup(id int32) (bool, int) {
	switch {
	case s.bits != nil:
		return id >= 0 && int(id/64) < len(s.bits) && s.bits[id/64]&(1<<(id%64)) != 0, 0
	case s.set != nil:
		_, ok := s.set[id]
		return ok, 0
	}
	for i, x := range s.few {
		if x == id {
			return true, i + 1
		}
	}
	return false, len(s.few)
}
