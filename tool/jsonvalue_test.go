package tool

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

var instanceSeeds = []string{
	`{}`, `[]`, `{"a": 1, "b": [1, 2.5, -0, 1e400, 123456789012345678901234567890], "c": {"d": null}}`,
	`{"text": "result 3"}`, ` { "x" : "tab\there \"quoted\" \\ \u00e9 \ud83d\ude00 \ud800 end" } `,
	`{"k": "k", "k": 2}`, `{"é": "日本語", "raw": "` + "\xff\xfe" + `"}`, `[true, false, null, "", {"": []}]`,
	`"just a string"`, `-12.5e-3`, `{"a":[[[[{"b":[]}]]]]}`, `{"a" 1}`, `{"a": 1,}`, `[1, 2`, `"\u12"`, `{"a": tru}`,
}

// TestDecodeInstanceMatchesJSONSchema: the fast decoder yields what the
// validator's own UnmarshalJSON yields for every valid text.
func TestDecodeInstanceMatchesJSONSchema(t *testing.T) {
	for _, s := range instanceSeeds {
		checkDecodeInstance(t, []byte(s))
	}
}

func checkDecodeInstance(t *testing.T, data []byte) {
	got, ok := decodeInstance(data)
	if !json.Valid(data) {
		return // never called on such text; it must only not panic
	}
	want, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	require.True(t, ok, "%q", data)
	require.Equal(t, want, got, "%q", data)
}

func FuzzDecodeInstance(f *testing.F) {
	for _, s := range instanceSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkDecodeInstance(t, []byte(s))
	})
}
