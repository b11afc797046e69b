package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxViolations bounds how many schema violations one error lists: the
// message is shown to the model and must stay short.
const maxViolations = 4

var printer = message.NewPrinter(language.English)

// checkArgs turns the model's argument text into the JSON object handed to
// Execute, or explains what is wrong with it. Empty text means no arguments.
func (e *entry) checkArgs(text string) (json.RawMessage, error) {
	raw := bytes.TrimSpace([]byte(text))
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v) // for the position of the syntax error
		return nil, fmt.Errorf("%w: arguments are not valid JSON: %v", ErrInvalidArguments, err)
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: arguments must be a JSON object, got %s", ErrInvalidArguments, jsonKind(raw[0]))
	}
	if e.params == nil {
		return raw, nil
	}
	inst, ok := decodeInstance(raw)
	if !ok { // not expected after json.Valid; encoding/json has the last word
		var err error
		if inst, err = jsonschema.UnmarshalJSON(bytes.NewReader(raw)); err != nil {
			return nil, fmt.Errorf("%w: arguments are not valid JSON: %v", ErrInvalidArguments, err)
		}
	}
	if err := e.params.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("%w: %s", ErrInvalidArguments, describe(ve))
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	return raw, nil
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// describe flattens a validation error tree into "path: problem" items, the
// leaves only, deduplicated and in a stable order.
func describe(ve *jsonschema.ValidationError) string {
	var items []string
	seen := map[string]bool{}
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			s := pointer(v.InstanceLocation) + ": " + problem(v.ErrorKind)
			if !seen[s] {
				seen[s] = true
				items = append(items, s)
			}
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(items, func(i, j int) bool { return items[i] < items[j] })
	if len(items) > maxViolations {
		items = append(items[:maxViolations], fmt.Sprintf("and %d more", len(items)-maxViolations))
	}
	return strings.Join(items, "; ")
}

// pointer renders an instance location as a JSON pointer ("/" for the root).
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, p := range loc {
		b.WriteByte('/')
		p = strings.ReplaceAll(p, "~", "~0")
		b.WriteString(strings.ReplaceAll(p, "/", "~1"))
	}
	return b.String()
}

// problem words the common violations the way a model reads them best;
// other kinds use the library's English text.
func problem(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "expected " + strings.Join(k.Want, " or ") + ", got " + k.Got
	case *kind.Required:
		if len(k.Missing) == 1 {
			return fmt.Sprintf("missing required property %q", k.Missing[0])
		}
		return "missing required properties " + quoteAll(k.Missing)
	case *kind.AdditionalProperties:
		return "unexpected property " + quoteAll(k.Properties)
	case *kind.Enum:
		want, _ := json.Marshal(k.Want)
		return "must be one of " + string(want)
	}
	return k.LocalizedString(printer)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
