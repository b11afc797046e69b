package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Dict is an insertion-ordered string-keyed map: the Go counterpart of a
// Python dict as json.loads builds it. Chat templates render tool schemas and
// tool-call arguments in the order their keys were written, so plain Go maps
// (which have no order) cannot stand in for them. The zero value is ready to
// use.
type Dict struct {
	keys   []string
	vals   []any
	idx    map[string]int // built once the dict grows past a few keys
	frozen *frozenDict    // set by Freeze
}

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{} }

// Dicts with inline room for their first keys: NewDictCap makes a small
// dict with one allocation instead of one for the Dict and one for every
// growth of its two slices.
type (
	dict2 struct {
		d Dict
		k [2]string
		v [2]any
	}
	dict4 struct {
		d Dict
		k [4]string
		v [4]any
	}
	dict8 struct {
		d Dict
		k [8]string
		v [8]any
	}
)

// NewDictCap returns an empty Dict with room for n keys, for callers that
// know how many keys they will set.
func NewDictCap(n int) *Dict {
	switch {
	case n <= 0:
		return &Dict{}
	case n <= 2:
		x := &dict2{}
		x.d.keys, x.d.vals = x.k[:0], x.v[:0]
		return &x.d
	case n <= 4:
		x := &dict4{}
		x.d.keys, x.d.vals = x.k[:0], x.v[:0]
		return &x.d
	case n <= dictIndexThreshold:
		x := &dict8{}
		x.d.keys, x.d.vals = x.k[:0], x.v[:0]
		return &x.d
	}
	return &Dict{keys: make([]string, 0, n), vals: make([]any, 0, n)}
}

// frozenDict is what Freeze records about a Dict: its tojson text with the
// default arguments, computed once.
type frozenDict struct {
	json     string
	jsonOK   bool // false when json is not usable (see freeze)
	height   int  // nesting levels below the dict, for tojson's depth limit
	heightOK bool
	visiting bool // being frozen: meeting it again means a cycle
}

// Freeze makes v and every Dict reachable from it (through dicts, lists and
// tuples) immutable, and precomputes what rendering them repeatedly would
// recompute: a frozen dict's `|tojson` (with the default arguments) is
// written from a copy made here. Callers freeze values they keep and pass
// to many renders, such as tool schemas, and must not change the lists
// inside them afterwards either. Templates cannot modify values, so a
// frozen value renders exactly as before; Set on a frozen Dict panics,
// because changing it would make that copy stale. Dicts holding values of
// other Go types (maps, typed slices, Funcs) are frozen without a copy.
func Freeze(v any) {
	_, _ = freeze(v, 0)
}

// freeze freezes v and returns its nesting height as appendJSON counts
// depth (0 for a scalar or an empty container); ok is false when that
// height is unknown (a cycle, or nesting far beyond what tojson accepts).
func freeze(v any, depth int) (height int, ok bool) {
	if depth > 2*maxDepth {
		return 0, false
	}
	switch x := v.(type) {
	case *Dict:
		if x.frozen != nil {
			return x.frozen.height, !x.frozen.visiting && x.frozen.heightOK
		}
		fd := &frozenDict{visiting: true}
		x.frozen = fd
		fd.height, fd.heightOK = freezeList(x.vals, depth)
		fd.visiting = false
		if fd.heightOK {
			o := newJSONOpts()
			if b, err := appendJSON(nil, x, &o, 0); err == nil {
				fd.json, fd.jsonOK = string(b), true
			}
		}
		return fd.height, fd.heightOK
	case []any:
		return freezeList(x, depth)
	case Tuple:
		return freezeList(x, depth)
	case nil, bool, string, bigInt, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr, float32, float64:
		return 0, true
	}
	// Go maps, typed slices, functions, ...: not frozen, so no text of a
	// dict holding one is kept.
	return 0, false
}

func freezeList(l []any, depth int) (height int, ok bool) {
	ok = true
	for _, e := range l {
		h, eok := freeze(e, depth+1)
		height, ok = max(height, 1+h), ok && eok
	}
	return height, ok
}

const dictIndexThreshold = 8

// Set sets key to v, keeping the key's first insertion position.
func (d *Dict) Set(key string, v any) {
	if d.frozen != nil {
		panic("jinja: Set on a frozen Dict (see Freeze)")
	}
	if i, ok := d.find(key); ok {
		d.vals[i] = v
		return
	}
	d.keys = append(d.keys, key)
	d.vals = append(d.vals, v)
	if d.idx != nil {
		d.idx[key] = len(d.keys) - 1
	} else if len(d.keys) > dictIndexThreshold {
		d.idx = make(map[string]int, len(d.keys)*2)
		for i, k := range d.keys {
			d.idx[k] = i
		}
	}
}

// Get returns the value stored under key.
func (d *Dict) Get(key string) (any, bool) {
	if i, ok := d.find(key); ok {
		return d.vals[i], true
	}
	return nil, false
}

// Len returns the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// Keys returns the keys in insertion order. The slice must not be modified.
func (d *Dict) Keys() []string { return d.keys }

func (d *Dict) find(key string) (int, bool) {
	if d.idx != nil {
		i, ok := d.idx[key]
		return i, ok
	}
	for i, k := range d.keys {
		if k == key {
			return i, true
		}
	}
	return 0, false
}

// Tuple is a Python tuple: it prints as (a, b) and compares unequal to lists.
// Templates get tuples from dict.items(), |items, |batch and tuple literals.
type Tuple []any

// groupTuple is the (grouper, list) pair |groupby yields: a tuple that
// also has .grouper and .list attributes.
type groupTuple struct {
	grouper any
	list    []any
}

func (g *groupTuple) tuple() Tuple { return Tuple{g.grouper, g.list} }

// Func is a Go function callable from a template, registered as a global
// variable. Positional arguments come first; keyword arguments (name=value)
// are passed in kwargs, which is nil when there are none.
type Func func(args []any, kwargs *Dict) (any, error)

// Exception is the error returned by Render when the template calls
// raise_exception(msg). Message is msg exactly.
type Exception struct{ Message string }

func (e *Exception) Error() string { return e.Message }

// undefined is jinja2's default Undefined: printing gives "", iterating gives
// nothing, testing gives false, and any other use is an error naming it.
type undefined struct {
	name string // variable or attribute name
	hint string // error message when used; derived from name when empty
	// objType, when set, is the Python type name of the object the missing
	// attribute was looked up on. The message is built only when needed:
	// templates probe missing keys (message.tool_calls) all the time.
	objType string
	// unsafe marks attributes the immutable sandbox refuses (list.append...):
	// calling them is a security error.
	unsafe bool
}

func (u *undefined) message() string {
	switch {
	case u.hint != "":
		return u.hint
	case u.unsafe:
		return fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe.", u.name, u.objType)
	case u.objType == "NoneType":
		return fmt.Sprintf("'None' has no attribute '%s'", u.name)
	case u.objType != "":
		return fmt.Sprintf("'%s object' has no attribute '%s'", u.objType, u.name)
	}
	return fmt.Sprintf("'%s' is undefined", u.name)
}

// bigInt is an integer outside int64, kept as its decimal digits.
type bigInt string

// namespace is the mutable object namespace(...) creates; the only thing
// {% set ns.attr = v %} may assign to.
type namespace struct {
	d Dict
	// room for the first attributes, so that namespace(...) is one
	// allocation (templates use one or two attributes)
	k [4]string
	v [4]any
}

// ---- conversions --------------------------------------------------------

// toInt reports v as an int64 if it is a Python int (bools included, as in
// Python where bool subclasses int).
func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

func isIntValue(v any) bool {
	switch v.(type) {
	case int64, int, int32, int16, int8, uint8, uint16, uint32, uint, uint64:
		return true
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	if i, ok := toInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

func isFloatValue(v any) bool {
	switch v.(type) {
	case float64, float32:
		return true
	}
	return false
}

func isNumber(v any) bool { return isIntValue(v) || isFloatValue(v) }

// toList returns v as a list if it is a Python list or tuple.
func toList(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case Tuple:
		return x, true
	case *groupTuple:
		return x.tuple(), true
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	case []map[string]any:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	case []*Dict:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

func isMapping(v any) bool {
	switch v.(type) {
	case *Dict, map[string]any, *namespace:
		return true
	}
	return false
}

// mapKeys returns a mapping's keys in iteration order.
func mapKeys(v any) []string {
	switch m := v.(type) {
	case *Dict:
		return m.keys
	case map[string]any:
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	case *namespace:
		return m.d.keys
	}
	return nil
}

func mapGet(v any, key string) (any, bool) {
	switch m := v.(type) {
	case *Dict:
		return m.Get(key)
	case map[string]any:
		x, ok := m[key]
		return x, ok
	case *namespace:
		return m.d.Get(key)
	}
	return nil, false
}

func mapLen(v any) int {
	switch m := v.(type) {
	case *Dict:
		return len(m.keys)
	case map[string]any:
		return len(m)
	case *namespace:
		return len(m.d.keys)
	}
	return 0
}

// truthy is Python's bool(v).
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case *undefined:
		return false
	case []any:
		return len(x) > 0
	case Tuple:
		return len(x) > 0
	case []string:
		return len(x) > 0
	case *Dict:
		return len(x.keys) > 0
	case map[string]any:
		return len(x) > 0
	case float64:
		return x != 0
	case float32:
		return x != 0
	}
	if i, ok := toInt(v); ok {
		return i != 0
	}
	if l, ok := toList(v); ok {
		return len(l) > 0
	}
	return true
}

// typeName is Python's type(v).__name__, used in error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case string:
		return "str"
	case *undefined:
		return "Undefined"
	case bigInt:
		return "int"
	case Tuple, *groupTuple:
		return "tuple"
	case *Dict, map[string]any:
		return "dict"
	case *namespace:
		return "Namespace"
	case *loopState:
		return "LoopContext"
	case *cycler:
		return "Cycler"
	case *macro:
		return "Macro"
	case Func, *boundMethod:
		return "function"
	}
	if isIntValue(v) {
		return "int"
	}
	if isFloatValue(v) {
		return "float"
	}
	if _, ok := toList(v); ok {
		return "list"
	}
	return fmt.Sprintf("%T", v)
}

// ---- printing -----------------------------------------------------------

// appendStr appends Python's str(v).
func appendStr(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return append(b, x...)
	case nil:
		return append(b, "None"...)
	case bool:
		if x {
			return append(b, "True"...)
		}
		return append(b, "False"...)
	case *undefined:
		return b
	case bigInt:
		return append(b, x...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return appendFloatRepr(b, x)
	case float32:
		return appendFloatRepr(b, float64(x))
	}
	if i, ok := toInt(v); ok {
		return strconv.AppendInt(b, i, 10)
	}
	return appendRepr(b, v)
}

func toStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(appendStr(nil, v))
}

// appendRepr appends Python's repr(v).
func appendRepr(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return appendStrRepr(b, x)
	case bigInt:
		return append(b, x...)
	case *groupTuple:
		return appendRepr(b, x.tuple())
	case *undefined:
		return append(b, "Undefined"...)
	case Tuple:
		b = append(b, '(')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendRepr(b, e)
		}
		if len(x) == 1 {
			b = append(b, ',')
		}
		return append(b, ')')
	case *Dict, map[string]any:
		b = append(b, '{')
		for i, k := range mapKeys(x) {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendStrRepr(b, k)
			b = append(b, ": "...)
			e, _ := mapGet(x, k)
			b = appendRepr(b, e)
		}
		return append(b, '}')
	case *namespace:
		b = append(b, "<Namespace {"...)
		for i, k := range x.d.keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendStrRepr(b, k)
			b = append(b, ": "...)
			b = appendRepr(b, x.d.vals[i])
		}
		return append(b, "}>"...)
	case *macro:
		return append(b, "<Macro '"+x.def.name+"'>"...)
	case Func, *boundMethod:
		return append(b, "<function>"...)
	case *loopState:
		return append(b, "<LoopContext>"...)
	}
	if l, ok := toList(v); ok {
		b = append(b, '[')
		for i, e := range l {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendRepr(b, e)
		}
		return append(b, ']')
	}
	if isNumber(v) || v == nil {
		return appendStr(b, v)
	}
	if _, ok := v.(bool); ok {
		return appendStr(b, v)
	}
	return fmt.Appendf(b, "%v", v)
}

// appendStrRepr appends Python's repr of a str: single quotes unless the
// text has a single quote and no double quote.
func appendStrRepr(b []byte, s string) []byte {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b = append(b, q)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == q || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c < 0x20 || c == 0x7f:
				b = fmt.Appendf(b, `\x%02x`, c)
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case unicode.IsPrint(r): // Python's str.isprintable for non-ASCII
			b = append(b, s[i:i+n]...)
		case r <= 0xff:
			b = fmt.Appendf(b, `\x%02x`, r)
		case r <= 0xffff:
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = fmt.Appendf(b, `\U%08x`, r)
		}
		i += n
	}
	return append(b, q)
}

// appendFloatRepr appends Python's repr(float): the shortest digits that
// round-trip, fixed notation for 1e-4 <= |x| < 1e16, otherwise exponent
// notation with at least two exponent digits.
func appendFloatRepr(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	// e looks like -d.ddde±xx
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	epos := strings.IndexByte(string(e), 'e')
	mant := e[:epos]
	exp, _ := strconv.Atoi(string(e[epos+1:]))
	digits := make([]byte, 0, 20)
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	decpt := exp + 1
	if neg {
		b = append(b, '-')
	}
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			b = append(b, "0."...)
			for i := 0; i < -decpt; i++ {
				b = append(b, '0')
			}
			b = append(b, digits...)
		case decpt >= len(digits):
			b = append(b, digits...)
			for i := len(digits); i < decpt; i++ {
				b = append(b, '0')
			}
			b = append(b, ".0"...)
		default:
			b = append(b, digits[:decpt]...)
			b = append(b, '.')
			b = append(b, digits[decpt:]...)
		}
		return b
	}
	b = append(b, digits[0])
	if len(digits) > 1 {
		b = append(b, '.')
		b = append(b, digits[1:]...)
	}
	b = append(b, 'e')
	x := decpt - 1
	if x < 0 {
		b = append(b, '-')
		x = -x
	} else {
		b = append(b, '+')
	}
	if x < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(x), 10)
}

// ---- equality and ordering ----------------------------------------------

// equal is Python ==.
func equal(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case nil:
		return b == nil
	case *undefined:
		_, ok := b.(*undefined)
		return ok
	case bigInt:
		y, ok := b.(bigInt)
		return ok && x == y
	}
	if isNumber(a) || isBool(a) {
		if !(isNumber(b) || isBool(b)) {
			return false
		}
		ai, aInt := toInt(a)
		bi, bInt := toInt(b)
		if aInt && bInt {
			return ai == bi
		}
		af, _ := toFloat(a)
		bf, _ := toFloat(b)
		return af == bf
	}
	if g, ok := a.(*groupTuple); ok {
		a = g.tuple()
	}
	if g, ok := b.(*groupTuple); ok {
		b = g.tuple()
	}
	if ta, ok := a.(Tuple); ok {
		tb, ok := b.(Tuple)
		return ok && listEqual(ta, tb)
	}
	if la, ok := toList(a); ok {
		if _, isT := b.(Tuple); isT {
			return false
		}
		lb, ok := toList(b)
		return ok && listEqual(la, lb)
	}
	if isMapping(a) {
		if !isMapping(b) || mapLen(a) != mapLen(b) {
			return false
		}
		for _, k := range mapKeys(a) {
			av, _ := mapGet(a, k)
			bv, ok := mapGet(b, k)
			if !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	}
	return a == b
}

func isBool(v any) bool { _, ok := v.(bool); return ok }

func listEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// compare is Python ordering for numbers, strings and sequences.
func compare(a, b any) (int, error) {
	if (isNumber(a) || isBool(a)) && (isNumber(b) || isBool(b)) {
		ai, aInt := toInt(a)
		bi, bInt := toInt(b)
		if aInt && bInt {
			return cmpOrdered(ai, bi), nil
		}
		af, _ := toFloat(a)
		bf, _ := toFloat(b)
		return cmpOrdered(af, bf), nil
	}
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return strings.Compare(sa, sb), nil
		}
	}
	_, tA := a.(Tuple)
	_, tB := b.(Tuple)
	la, okA := toList(a)
	lb, okB := toList(b)
	if okA && okB && tA == tB {
		for i := 0; i < len(la) && i < len(lb); i++ {
			if equal(la[i], lb[i]) {
				continue
			}
			return compare(la[i], lb[i])
		}
		return cmpOrdered(len(la), len(lb)), nil
	}
	return 0, fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
}

func cmpOrdered[T int | int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
