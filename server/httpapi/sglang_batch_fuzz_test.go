package httpapi

import (
	"encoding/json"
	"testing"
)

// FuzzSGLangBatch: any body either is not a batch, is refused, or expands
// to at most maxGenerateBatch items, each a JSON object with a rid.
func FuzzSGLangBatch(f *testing.F) {
	for _, s := range []string{
		`{"input_ids":[[1,2],[3]],"sampling_params":{"n":2}}`,
		`{"text":["a","b"],"rid":["x","y"],"sampling_params":[{},{"n":1}],"return_logprob":[true,false]}`,
		`{"input_ids":[1],"sampling_params":{"n":3}}`,
		`{"input_ids":[[1]],"rid":"r","logprob_start_len":[0]}`,
		`[1]`, `{}`, `{"text":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, ok, err := sglangBatch(body, nil)
		if !ok || err != nil {
			if len(items) != 0 {
				t.Fatalf("items with ok=%v err=%v", ok, err)
			}
			return
		}
		if len(items) == 0 || len(items) > maxGenerateBatch {
			t.Fatalf("%d items", len(items))
		}
		for i, it := range items {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(it, &m); err != nil {
				t.Fatalf("item %d is not an object: %v", i, err)
			}
			var rid string
			if err := json.Unmarshal(m["rid"], &rid); err != nil {
				t.Fatalf("item %d: rid %s", i, m["rid"])
			}
		}
	})
}
