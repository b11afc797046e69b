package view_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/view"
)

// FuzzTokenTextEscaped renders a trajectory whose token text, id, group,
// data source and Extra are arbitrary strings and checks that the page
// has exactly the elements the template makes: nothing the data says can
// become markup or script.
func FuzzTokenTextEscaped(f *testing.F) {
	for _, s := range []string{hostileScript, hostileAttr, "</span><script>x</script>", "<!--", "]]>", "\u2028", "&lt;b&gt;", "</style>", "<svg onload=x>", "{{.}}"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, tokenText, field string) {
		if tokenText == "" || strings.ContainsRune(tokenText, 0) {
			return
		}
		js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		src := strings.NewReplacer("`SCRIPT`", js(tokenText), "`ATTR`", js("x"+tokenText)).Replace(tinyTokenizerJSON)
		tok, err := tokenizer.FromJSON([]byte(src))
		if err != nil {
			return // not a token the tokenizer accepts
		}
		// A token text already in the vocabulary takes that id, and the
		// added tokens after it move down one (as HF tokenizers assigns
		// them), so the planted ids would decode to other tokens (id 13 to
		// "Error: bad call", which the page rightly badges as an error fed
		// back). The comparison holds only where ids 12 and 13 are the
		// planted texts.
		for id, want := range map[int32]string{12: tokenText, 13: "x" + tokenText} {
			if s, err := tok.Decode([]int32{id}, false); err != nil || s != want {
				return
			}
		}
		field = "f" + field // the planted trajectory's fields are not empty either
		tr := planted(t)
		tr.ID, tr.GroupID = field, field
		raw, _ := json.Marshal(field)
		tr.Extra = map[string]json.RawMessage{"data_source": raw, "note": raw}
		var want, got bytes.Buffer
		if err := view.WriteHTML(&want, []*trajectory.Trajectory{planted(t)}, view.Options{Tokenizer: tinyTokenizer(t)}); err != nil {
			t.Fatal(err)
		}
		if err := view.WriteHTML(&got, []*trajectory.Trajectory{tr}, view.Options{Tokenizer: tok}); err != nil {
			t.Fatal(err)
		}
		if a, b := elements(t, want.Bytes()), elements(t, got.Bytes()); a != b {
			t.Fatalf("the data changed the page's structure:\nwant %s\ngot  %s", a, b)
		}
	})
}

// elements lists the page's element names and attribute keys in order.
func elements(t *testing.T, page []byte) string {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode {
			b.WriteString(n.Data)
			for _, a := range n.Attr {
				b.WriteString(" " + a.Key)
			}
			b.WriteString(";")
		}
	})
	return b.String()
}
