package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// A generation request's body is split while it is read, never held whole:
// the token-id list (the one member that grows with the prompt: a million
// ids is ~7 MB of JSON) is scanned from the stream straight into []int32,
// and only the other members are kept as JSON for encoding/json. Reading the
// body into a buffer, copying the list into a json.RawMessage and then
// scanning it cost about seven times the body in memory at peak.

// idChunk is the number of ids scanned into one piece before the pieces
// are joined: growing one slice by appending would copy it log(n) times
// and keep up to twice its size at the moment of each copy.
const idChunk = 1 << 16

// splitBody is a request body split as it was read.
type splitBody struct {
	// rest is the JSON object without the id list (when the id key held
	// an array), or the whole body when it is not a JSON object.
	rest []byte
	// ids is the id list; hasIDs reports that the id key held an array.
	ids    []int32
	hasIDs bool
}

// byteScanner reads a JSON text one byte at a time, counting the offset
// for error messages.
type byteScanner struct {
	r   *bufio.Reader
	off int64
}

// errEOF is the end of the body in the middle of the JSON text.
var errEOF = errors.New("unexpected end of the request body")

func (s *byteScanner) next() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			return 0, badRequest("invalid JSON at byte offset %d: %v", s.off, errEOF)
		}
		return 0, bodyError(err)
	}
	s.off++
	return c, nil
}

// nonSpace returns the next byte that is not JSON white space.
func (s *byteScanner) nonSpace() (byte, error) {
	for {
		c, err := s.next()
		if err != nil || !isSpace(c) {
			return c, err
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// listOfLists reports, without consuming anything, whether the list whose
// '[' was just read starts with another list (a batch of id lists, which
// is kept whole in rest). Only the read buffer is looked at: past it the
// list is read as ids, which names the nesting as an error.
func (s *byteScanner) listOfLists() bool {
	for k := 1; k <= s.r.Size(); k++ {
		b, err := s.r.Peek(k)
		if err != nil {
			return false
		}
		if c := b[k-1]; !isSpace(c) {
			return c == '['
		}
	}
	return false
}

func (s *byteScanner) syntax(format string, args ...any) error {
	return badRequest("invalid JSON at byte offset %d: %s", s.off, fmt.Sprintf(format, args...))
}

// readBodySplit reads a JSON object from r, scanning the value of idKey
// (matched as encoding/json matches field names: exactly or case-folded)
// into ids when it is an array and copying every other member into rest.
// An id key given twice is refused, so that the result never depends on
// which of two lists would win. Bodies that are not JSON objects go
// whole into rest, for encoding/json to reject them in its words.
func readBodySplit(r io.Reader, idKey string) (*splitBody, error) {
	return readBodySplitMax(r, idKey, 0)
}

// splitBody is readBodySplit stopping once the id list passes what the
// context can take (Config.MaxModelLen less one token to generate): a
// prompt that cannot be served is refused before the rest of it is read,
// not after it has been parsed whole.
func (s *Server) splitBody(r io.Reader, idKey string) (*splitBody, error) {
	if n := s.cfg.MaxModelLen; n > 0 {
		return readBodySplitMax(r, idKey, n-1)
	}
	return readBodySplit(r, idKey)
}

// errTooManyIDs is an id list that passed its limit of max ids.
type errTooManyIDs struct{ max int }

func (e errTooManyIDs) Error() string { return fmt.Sprintf("more than %d token ids", e.max) }

// readBodySplitMax is readBodySplit with the id list limited to maxIDs
// ids (0: no limit), refused with vLLM's context_length_exceeded as soon
// as one more is read.
func readBodySplitMax(r io.Reader, idKey string, maxIDs int) (*splitBody, error) {
	s := &byteScanner{r: bufio.NewReaderSize(r, 32<<10)}
	out := &splitBody{}
	c, err := s.nonSpace()
	if err != nil {
		var re *errRequest
		if errors.As(err, &re) && re.status == 400 {
			return out, nil // empty body: the caller says what is missing
		}
		return nil, err
	}
	if c != '{' {
		rest, err := io.ReadAll(s.r)
		if err != nil {
			return nil, bodyError(err)
		}
		out.rest = append([]byte{c}, rest...)
		return out, nil
	}
	out.rest = append(out.rest, '{')
	members := 0
	seen := false
	if c, err = s.nonSpace(); err != nil {
		return nil, err
	}
	for c != '}' {
		if c != '"' {
			return nil, s.syntax("expected a member name, got %q", c)
		}
		start := len(out.rest)
		if members > 0 {
			out.rest = append(out.rest, ',')
		}
		keyAt := len(out.rest)
		if out.rest, err = copyString(s, out.rest); err != nil {
			return nil, err
		}
		if c, err = s.nonSpace(); err != nil {
			return nil, err
		}
		if c != ':' {
			return nil, s.syntax("expected ':' after a member name, got %q", c)
		}
		if c, err = s.nonSpace(); err != nil {
			return nil, err
		}
		isID := false
		if idKey != "" {
			var name string
			if err := json.Unmarshal(out.rest[keyAt:], &name); err != nil {
				return nil, s.syntax("member name: %v", err)
			}
			isID = len(name) == len(idKey) && (name == idKey || bytes.EqualFold([]byte(name), []byte(idKey)))
		}
		if isID {
			if seen {
				return nil, badRequest("field %q is given twice", idKey)
			}
			seen = true
		}
		if isID && c == '[' && !s.listOfLists() {
			out.rest = out.rest[:start]
			if out.ids, err = readIntList(s, maxIDs); err != nil {
				var re *errRequest
				var many errTooManyIDs
				switch {
				case errors.As(err, &re):
					return nil, err // the body's end, size or time limit
				case errors.As(err, &many):
					return nil, &errRequest{status: http.StatusBadRequest, code: "context_length_exceeded", msg: fmt.Sprintf(
						"field %q: this model's maximum context length is %d tokens, and the prompt has more than %d input tokens (the request was refused before the rest of it was read)",
						idKey, many.max+1, many.max)}
				}
				return nil, badRequest("field %q: %v", idKey, err)
			}
			out.hasIDs = true
		} else {
			out.rest = append(out.rest, ':')
			if out.rest, err = copyValue(s, out.rest, c); err != nil {
				return nil, err
			}
			members++
		}
		if c, err = s.nonSpace(); err != nil {
			return nil, err
		}
		switch c {
		case ',':
			if c, err = s.nonSpace(); err != nil {
				return nil, err
			}
			if c == '}' {
				return nil, s.syntax("a ',' before '}'")
			}
		case '}':
		default:
			return nil, s.syntax("expected ',' or '}' after a member, got %q", c)
		}
	}
	out.rest = append(out.rest, '}')
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, bodyError(err)
		}
		s.off++
		if !isSpace(c) {
			return nil, s.syntax("unexpected %q after the top-level object", c)
		}
	}
}

// copyString copies a JSON string whose opening quote was read, quotes
// included; encoding/json checks its escapes later.
func copyString(s *byteScanner, dst []byte) ([]byte, error) {
	dst = append(dst, '"')
	for {
		c, err := s.next()
		if err != nil {
			return dst, err
		}
		dst = append(dst, c)
		switch c {
		case '"':
			return dst, nil
		case '\\':
			c, err := s.next()
			if err != nil {
				return dst, err
			}
			dst = append(dst, c)
		}
	}
}

// copyValue copies the JSON value starting with c. It follows nesting and
// strings only to find the value's end; encoding/json validates it.
func copyValue(s *byteScanner, dst []byte, c byte) ([]byte, error) {
	var err error
	depth := 0
	for {
		switch {
		case c == '"':
			if dst, err = copyString(s, dst); err != nil {
				return dst, err
			}
		case c == '{' || c == '[':
			depth++
			dst = append(dst, c)
		case c == '}' || c == ']':
			if depth == 0 {
				return dst, s.syntax("unexpected %q", c)
			}
			depth--
			dst = append(dst, c)
		default:
			// A number or literal: up to the next delimiter.
			dst = append(dst, c)
			for {
				b, err := s.r.Peek(1)
				if err != nil || isSpace(b[0]) || bytes.IndexByte([]byte(",:]}[{\""), b[0]) >= 0 {
					break
				}
				if c, err = s.next(); err != nil {
					return dst, err
				}
				dst = append(dst, c)
			}
		}
		if depth == 0 {
			return dst, nil
		}
		if c, err = s.next(); err != nil {
			return dst, err
		}
	}
}

// readIntList scans a JSON array of 32-bit integers whose '[' was read,
// checking the JSON syntax itself (the list never goes through
// encoding/json). Errors say which element is wrong. With max > 0, a list
// of more than max ids fails with errTooManyIDs as soon as the next one
// starts, so what a refused list costs is bounded by max, not its length.
func readIntList(s *byteScanner, max int) ([]int32, error) {
	var done [][]int32
	cur := make([]int32, 0, 256)
	total := 0
	c, err := s.nonSpace()
	if err != nil {
		return nil, err
	}
	if c == ']' {
		return cur, nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			if c, err = s.nonSpace(); err != nil {
				return nil, err
			}
		}
		if c == '[' {
			return nil, errBatch
		}
		if max > 0 && total == max {
			return nil, errTooManyIDs{max}
		}
		neg := c == '-'
		if neg {
			if c, err = s.next(); err != nil {
				return nil, err
			}
		}
		if c < '0' || c > '9' {
			return nil, fmt.Errorf("element %d is not an integer token id", n)
		}
		v := int64(c - '0')
		for {
			if c, err = s.next(); err != nil {
				return nil, err
			}
			if c < '0' || c > '9' {
				break
			}
			if v == 0 {
				return nil, fmt.Errorf("element %d: a number with a leading zero is not JSON", n)
			}
			v = v*10 + int64(c-'0')
			if v > 1<<31 {
				return nil, fmt.Errorf("element %d does not fit a 32-bit token id", n)
			}
		}
		if c == '.' || c == 'e' || c == 'E' {
			return nil, fmt.Errorf("element %d is not an integer token id", n)
		}
		if neg {
			v = -v
		}
		if v > 1<<31-1 {
			return nil, fmt.Errorf("element %d (%d) does not fit a 32-bit token id", n, v)
		}
		if len(cur) == idChunk {
			done = append(done, cur)
			cur = make([]int32, 0, idChunk)
		}
		cur = append(cur, int32(v))
		total++
		for isSpace(c) {
			if c, err = s.next(); err != nil {
				return nil, err
			}
		}
		switch c {
		case ',':
		case ']':
			if done == nil {
				return cur, nil
			}
			ids := make([]int32, 0, total)
			for _, d := range done {
				ids = append(ids, d...)
			}
			return append(ids, cur...), nil
		default:
			return nil, fmt.Errorf("element %d: unexpected %q", n, c)
		}
	}
}

// parseIntList reads a JSON array of 32-bit integers held in memory.
func parseIntList(data []byte) ([]int32, error) {
	s := &byteScanner{r: bufio.NewReader(bytes.NewReader(data))}
	c, err := s.nonSpace()
	if err != nil || c != '[' {
		return nil, errors.New("expected a list of token ids")
	}
	ids, err := readIntList(s, 0)
	if err != nil {
		var re *errRequest
		if errors.As(err, &re) {
			return nil, errors.New("unterminated list")
		}
		return nil, err
	}
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			return ids, nil
		}
		if err != nil || !isSpace(c) {
			return nil, errors.New("unexpected data after the list")
		}
	}
}
