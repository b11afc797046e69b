package tokenizer_test

import (
	"fmt"

	"github.com/agentrl/agentrl/tokenizer"
)

// A tiny byte-level BPE tokenizer.json: five merges build "hello", a sixth
// joins it to a leading space (Ġ in the byte-level alphabet).
const tinyTokenizerJSON = `{
  "added_tokens": [{"id": 11, "content": "<|end|>", "special": true, "normalized": false,
    "single_word": false, "lstrip": false, "rstrip": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE",
    "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "he": 5, "ll": 6, "hell": 7, "hello": 8, "Ġhello": 9, "!": 10},
    "merges": ["h e", "l l", "he ll", "hell o", "Ġ hello"]}
}`

func Example() {
	tok, err := tokenizer.FromJSON([]byte(tinyTokenizerJSON))
	if err != nil {
		panic(err)
	}
	ids := tok.Encode("hello hello!<|end|>")
	fmt.Println(ids)
	text, _ := tok.Decode(ids, true)
	fmt.Printf("%q\n", text)

	// Streaming: text comes out as soon as it is complete.
	d := tok.NewDecoder(false)
	for _, id := range ids {
		piece, _ := d.Add(id)
		fmt.Printf("%q ", piece)
	}
	fmt.Println()
	// Output:
	// [8 9 10 11]
	// "hello hello!"
	// "hello" " hello" "!" "<|end|>"
}
