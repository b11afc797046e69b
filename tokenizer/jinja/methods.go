package jinja

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// boundMethod is a Python method taken from a value without calling it.
type boundMethod struct {
	recv any
	name string
}

func isDictMethod(name string) bool {
	switch name {
	case "items", "keys", "values", "get", "copy",
		"pop", "popitem", "update", "clear", "setdefault":
		return true
	}
	return false
}

func isListMethod(name string) bool {
	switch name {
	case "index", "count", "copy",
		"append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear":
		return true
	}
	return false
}

// isUnsafeMethod lists the mutating methods that jinja2's
// ImmutableSandboxedEnvironment refuses.
func isUnsafeMethod(name string) bool {
	switch name {
	case "append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear",
		"popitem", "update", "setdefault":
		return true
	}
	return false
}

func isStrMethod(name string) bool {
	switch name {
	case "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
		"replace", "upper", "lower", "title", "capitalize", "swapcase", "format", "join",
		"find", "rfind", "index", "rindex", "count", "isdigit", "isalpha", "isalnum", "isspace",
		"isupper", "islower", "isnumeric", "isdecimal", "istitle", "zfill", "center", "ljust", "rjust",
		"removeprefix", "removesuffix", "partition", "rpartition", "casefold", "expandtabs", "encode":
		return true
	}
	return false
}

func hasMethod(recv any, name string) bool {
	switch recv.(type) {
	case string:
		return isStrMethod(name)
	case *Dict, map[string]any:
		return isDictMethod(name) && !isUnsafeMethod(name)
	case *loopState:
		return name == "cycle" || name == "changed"
	case *cycler:
		return name == "next" || name == "reset"
	case []any, Tuple, []string:
		return isListMethod(name) && !isUnsafeMethod(name)
	}
	return false
}

func callMethod(r *renderer, recv any, name string, args []any, kw *kwArgs) (any, error) {
	switch x := recv.(type) {
	case string:
		return strMethod(x, name, args, kw)
	case *cycler:
		return x.call(name)
	case *loopState:
		switch name {
		case "cycle":
			if len(args) == 0 {
				return nil, errorf("no items for cycling given")
			}
			return args[x.i%len(args)], nil
		case "changed":
			var v any = Tuple(args)
			if len(args) == 1 {
				v = args[0]
			}
			if x.hasLast && equal(x.changed, v) {
				return false, nil
			}
			x.changed, x.hasLast = v, true
			return true, nil
		}
	}
	if isMapping(recv) {
		switch name {
		case "items":
			keys := mapKeys(recv)
			out := make([]any, len(keys))
			for i, k := range keys {
				v, _ := mapGet(recv, k)
				out[i] = Tuple{k, v}
			}
			return out, nil
		case "keys":
			keys := mapKeys(recv)
			out := make([]any, len(keys))
			for i, k := range keys {
				out[i] = k
			}
			return out, nil
		case "values":
			keys := mapKeys(recv)
			out := make([]any, len(keys))
			for i, k := range keys {
				out[i], _ = mapGet(recv, k)
			}
			return out, nil
		case "get":
			if len(args) < 1 || len(args) > 2 {
				return nil, errorf("get expected 1 or 2 arguments, got %d", len(args))
			}
			var def any
			if len(args) == 2 {
				def = args[1]
			}
			k, ok := args[0].(string)
			if !ok {
				return def, nil
			}
			if v, ok := mapGet(recv, k); ok {
				return v, nil
			}
			return def, nil
		case "copy":
			d := NewDict()
			for _, k := range mapKeys(recv) {
				v, _ := mapGet(recv, k)
				d.Set(k, v)
			}
			return d, nil
		}
	}
	if l, ok := toList(recv); ok {
		switch name {
		case "index":
			if len(args) < 1 {
				return nil, errorf("index expected at least 1 argument")
			}
			for i, x := range l {
				if equal(x, args[0]) {
					return int64(i), nil
				}
			}
			return nil, errorf("%s is not in list", string(appendRepr(nil, args[0])))
		case "count":
			if len(args) != 1 {
				return nil, errorf("count expected 1 argument")
			}
			n := int64(0)
			for _, x := range l {
				if equal(x, args[0]) {
					n++
				}
			}
			return n, nil
		case "copy":
			return append([]any{}, l...), nil
		}
	}
	v, err := getAttr(recv, name)
	if err != nil {
		return nil, err
	}
	if bm, ok := v.(*boundMethod); ok && bm.recv == recv && bm.name == name {
		return nil, errorf("'%s' object has no method '%s'", typeName(recv), name)
	}
	return r.call(v, args, kw)
}

func strArg(args []any, kw *kwArgs, i int, name string) (string, bool, error) {
	v, ok := arg(args, kw, i, name)
	if !ok || v == nil {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, errorf("%s must be str or None, not %s", name, typeName(v))
	}
	return s, true, nil
}

func intArg(args []any, kw *kwArgs, i int, name string, def int64) (int64, error) {
	v, ok := arg(args, kw, i, name)
	if !ok || v == nil {
		return def, nil
	}
	n, isInt := toInt(v)
	if !isInt {
		return 0, errorf("'%s' object cannot be interpreted as an integer", typeName(v))
	}
	return n, nil
}

func strMethod(s, name string, args []any, kw *kwArgs) (any, error) {
	switch name {
	case "strip", "lstrip", "rstrip":
		chars, has, err := strArg(args, kw, 0, "chars")
		if err != nil {
			return nil, err
		}
		return pyStrip(s, name, chars, has), nil
	case "split", "rsplit":
		sep, has, err := strArg(args, kw, 0, "sep")
		if err != nil {
			return nil, err
		}
		maxsplit, err := intArg(args, kw, 1, "maxsplit", -1)
		if err != nil {
			return nil, err
		}
		if has && sep == "" {
			return nil, errorf("empty separator")
		}
		var parts []string
		if name == "split" {
			parts = pySplit(s, sep, has, int(maxsplit))
		} else {
			parts = pyRSplit(s, sep, has, int(maxsplit))
		}
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case "splitlines":
		keep := false
		if v, ok := arg(args, kw, 0, "keepends"); ok {
			keep = truthy(v)
		}
		lines := splitLines(s, keep)
		out := make([]any, len(lines))
		for i, p := range lines {
			out[i] = p
		}
		return out, nil
	case "startswith", "endswith":
		if len(args) < 1 {
			return nil, errorf("%s takes at least 1 argument", name)
		}
		sub, err := sliceArgs(s, args[1:])
		if err != nil {
			return nil, err
		}
		check := func(p any) (bool, error) {
			ps, ok := p.(string)
			if !ok {
				return false, errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(p))
			}
			if name == "startswith" {
				return strings.HasPrefix(sub, ps), nil
			}
			return strings.HasSuffix(sub, ps), nil
		}
		if t, ok := args[0].(Tuple); ok {
			for _, p := range t {
				if ok, err := check(p); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		}
		return check(args[0])
	case "replace":
		if len(args) < 2 {
			return nil, errorf("replace expected at least 2 arguments, got %d", len(args))
		}
		old, ok1 := args[0].(string)
		nw, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, errorf("replace arguments must be str")
		}
		n, err := intArg(args, kw, 2, "count", -1)
		if err != nil {
			return nil, err
		}
		return pyReplace(s, old, nw, n)
	case "upper":
		return pyUpper(s), nil
	case "lower", "casefold":
		return pyLower(s), nil
	case "title":
		return pyTitle(s), nil
	case "capitalize":
		return pyCapitalize(s), nil
	case "swapcase":
		return strings.Map(func(r rune) rune {
			if unicode.IsUpper(r) {
				return unicode.ToLower(r)
			}
			return unicode.ToUpper(r)
		}, s), nil
	case "format":
		return strFormat(s, args, kw)
	case "join":
		if len(args) != 1 {
			return nil, errorf("join takes exactly one argument")
		}
		items, err := iterate(args[0])
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for i, it := range items {
			x, ok := it.(string)
			if !ok {
				return nil, errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
			}
			if i > 0 {
				b.WriteString(s)
			}
			b.WriteString(x)
		}
		return b.String(), nil
	case "find", "rfind", "index", "rindex", "count":
		if len(args) < 1 {
			return nil, errorf("%s takes at least 1 argument", name)
		}
		sub, ok := args[0].(string)
		if !ok {
			return nil, errorf("must be str, not %s", typeName(args[0]))
		}
		hay, err := sliceArgs(s, args[1:])
		if err != nil {
			return nil, err
		}
		offset := int64(utf8.RuneCountInString(s) - utf8.RuneCountInString(hay))
		if len(args) > 1 {
			if st, ok := toInt(args[1]); ok {
				n := int64(utf8.RuneCountInString(s))
				if st < 0 {
					st = max(st+n, 0)
				}
				offset = min(st, n)
			}
		}
		if name == "count" {
			if sub == "" {
				return int64(utf8.RuneCountInString(hay) + 1), nil
			}
			return int64(strings.Count(hay, sub)), nil
		}
		var i int
		if name == "find" || name == "index" {
			i = strings.Index(hay, sub)
		} else {
			i = strings.LastIndex(hay, sub)
		}
		if i < 0 {
			if name == "index" || name == "rindex" {
				return nil, errorf("substring not found")
			}
			return int64(-1), nil
		}
		return offset + int64(utf8.RuneCountInString(hay[:i])), nil
	case "isdigit", "isdecimal", "isnumeric":
		return s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) }) < 0, nil
	case "isalpha":
		return s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) < 0, nil
	case "isalnum":
		return s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) < 0, nil
	case "isspace":
		return s != "" && strings.IndexFunc(s, func(r rune) bool { return !isPySpace(r) }) < 0, nil
	case "isupper", "islower":
		cased := false
		for _, r := range s {
			if unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) {
				cased = true
				if (name == "isupper" && !unicode.IsUpper(r)) || (name == "islower" && !unicode.IsLower(r)) {
					return false, nil
				}
			}
		}
		return cased, nil
	case "istitle":
		return s != "" && pyTitle(s) == s && strings.IndexFunc(s, unicode.IsLetter) >= 0, nil
	case "zfill":
		w, err := intArg(args, kw, 0, "width", 0)
		if err != nil {
			return nil, err
		}
		if w > maxOutput {
			return nil, limitErr("zfill width %d too large", w)
		}
		n := int64(utf8.RuneCountInString(s))
		if w <= n {
			return s, nil
		}
		sign := ""
		if s != "" && (s[0] == '-' || s[0] == '+') {
			sign, s = s[:1], s[1:]
		}
		return sign + strings.Repeat("0", int(w-n)) + s, nil
	case "center", "ljust", "rjust":
		w, err := intArg(args, kw, 0, "width", 0)
		if err != nil {
			return nil, err
		}
		if w > maxOutput {
			return nil, limitErr("%s width %d too large", name, w)
		}
		fill := " "
		if fs, has, err := strArg(args, kw, 1, "fillchar"); err != nil {
			return nil, err
		} else if has {
			if utf8.RuneCountInString(fs) != 1 {
				return nil, errorf("The fill character must be exactly one character long")
			}
			fill = fs
		}
		return pad(s, int(w), fill, name), nil
	case "removeprefix":
		p, _, err := strArg(args, kw, 0, "prefix")
		if err != nil {
			return nil, err
		}
		return strings.TrimPrefix(s, p), nil
	case "removesuffix":
		p, _, err := strArg(args, kw, 0, "suffix")
		if err != nil {
			return nil, err
		}
		return strings.TrimSuffix(s, p), nil
	case "partition", "rpartition":
		sep, _, err := strArg(args, kw, 0, "sep")
		if err != nil {
			return nil, err
		}
		if sep == "" {
			return nil, errorf("empty separator")
		}
		i := strings.Index(s, sep)
		if name == "rpartition" {
			i = strings.LastIndex(s, sep)
		}
		if i < 0 {
			if name == "rpartition" {
				return Tuple{"", "", s}, nil
			}
			return Tuple{s, "", ""}, nil
		}
		return Tuple{s[:i], sep, s[i+len(sep):]}, nil
	case "expandtabs":
		return strings.ReplaceAll(s, "\t", "        "), nil
	}
	return nil, errorf("'str' object has no attribute '%s'", name)
}

// sliceArgs applies optional start/end arguments (character indices).
func sliceArgs(s string, args []any) (string, error) {
	if len(args) == 0 {
		return s, nil
	}
	var ptrs [2]*int64
	for i := 0; i < len(args) && i < 2; i++ {
		if args[i] == nil {
			continue
		}
		n, ok := toInt(args[i])
		if !ok {
			return "", errorf("slice indices must be integers or None")
		}
		ptrs[i] = &n
	}
	v, err := sliceValue(s, ptrs[0], ptrs[1], nil)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func pad(s string, w int, fill, how string) string {
	n := utf8.RuneCountInString(s)
	if w <= n {
		return s
	}
	total := w - n
	left := 0
	switch how {
	case "rjust":
		left = total
	case "center":
		// CPython: left = total/2 + (total & width & 1)
		left = total/2 + (total & w & 1)
	}
	return strings.Repeat(fill, left) + s + strings.Repeat(fill, total-left)
}

func pyStrip(s, how, chars string, has bool) string {
	var f func(rune) bool
	if has {
		f = func(r rune) bool { return strings.ContainsRune(chars, r) }
	} else {
		f = isPySpace
	}
	switch how {
	case "lstrip":
		return strings.TrimLeftFunc(s, f)
	case "rstrip":
		return strings.TrimRightFunc(s, f)
	}
	return strings.TrimFunc(s, f)
}

// pySplit is Python's str.split(sep, maxsplit).
func pySplit(s, sep string, hasSep bool, maxsplit int) []string {
	if hasSep {
		if maxsplit < 0 {
			return strings.Split(s, sep)
		}
		return strings.SplitN(s, sep, maxsplit+1)
	}
	var out []string
	i := 0
	for {
		i = skipSpace(s, i)
		if i >= len(s) {
			return out
		}
		if maxsplit >= 0 && len(out) == maxsplit {
			return append(out, rstripSpace(s[i:]))
		}
		j := i
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if isPySpace(r) {
				break
			}
			j += n
		}
		out = append(out, s[i:j])
		i = j
	}
}

func pyRSplit(s, sep string, hasSep bool, maxsplit int) []string {
	if maxsplit < 0 {
		return pySplit(s, sep, hasSep, -1)
	}
	var rev []string
	if hasSep {
		for len(rev) < maxsplit {
			i := strings.LastIndex(s, sep)
			if i < 0 {
				break
			}
			rev = append(rev, s[i+len(sep):])
			s = s[:i]
		}
		rev = append(rev, s)
	} else {
		s = rstripSpace(s)
		for s != "" {
			if len(rev) == maxsplit {
				rev = append(rev, s)
				break
			}
			j := len(s)
			for j > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:j])
				if isPySpace(r) {
					break
				}
				j -= n
			}
			rev = append(rev, s[j:])
			s = rstripSpace(s[:j])
		}
	}
	out := make([]string, len(rev))
	for i, p := range rev {
		out[len(rev)-1-i] = p
	}
	return out
}

func pyReplace(s, old, nw string, n int64) (any, error) {
	if n < 0 {
		n = -1
	}
	cnt := strings.Count(s, old)
	if n >= 0 && int64(cnt) > n {
		cnt = int(n)
	}
	if len(s)+cnt*(len(nw)-len(old)) > maxOutput {
		return nil, limitErr("string longer than %d bytes", maxOutput)
	}
	if old == "" {
		// Python inserts nw between characters (and at both ends).
		var b strings.Builder
		k := int64(0)
		for _, r := range s {
			if n < 0 || k < n {
				b.WriteString(nw)
				k++
			}
			b.WriteRune(r)
		}
		if n < 0 || k < n {
			b.WriteString(nw)
		}
		return b.String(), nil
	}
	return strings.Replace(s, old, nw, int(n)), nil
}

// pyTitle is Python's str.title: a letter following a cased letter is
// lowercased, any other letter is titlecased.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if prevCased {
			b.WriteString(pyLower(string(r)))
		} else {
			writeTitle(&b, r)
		}
		prevCased = isCased(r)
	}
	return b.String()
}

func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	var b strings.Builder
	writeTitle(&b, r)
	b.WriteString(pyLower(s[n:]))
	return b.String()
}

// splitLines is Python's str.splitlines.
func splitLines(s string, keep bool) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end := i + n
			if r == '\r' && end < len(s) && s[end] == '\n' {
				end++
			}
			if keep {
				out = append(out, s[start:end])
			} else {
				out = append(out, s[start:i])
			}
			start = end
			i = end
			continue
		}
		i += n
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
