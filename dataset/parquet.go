package dataset

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"runtime/debug"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/agentrl/agentrl/agentloop"
)

// Limits on what a Parquet file may ask of the reader. A file over them is
// an error before any data is decoded.
const (
	maxSchemaDepth   = 64
	maxColumns       = 4096
	maxChunkBytes    = 1 << 30 // one column chunk, compressed or not
	maxRowsPerBuffer = 16
)

// Parquet reads the rows of a Parquet file. Nested values are assembled
// from the repetition and definition levels here, following the schema's
// annotations under the Parquet format's backward-compatibility rules
// (LogicalTypes.md), so that every list and map encoding real writers
// produce reads the same: 3-level LIST (pyarrow, pandas, Spark, DuckDB,
// Arrow-rs, whatever the inner names), legacy 2-level lists (parquet-mr's
// "array" and "_tuple" groups, Spark's old writer), bare repeated fields
// (parquetjs, protobuf/thrift writers), LIST and MAP given only as
// converted types (DuckDB), MAP and MAP_KEY_VALUE.
//
// The parquet library is called with panics recovered: a panic in it on a
// corrupt file becomes an error naming the file and row.
type Parquet struct {
	name   string
	opts   Options
	file   *parquet.File
	root   *pqNode
	leaves []*pqNode // by column index
	closer io.Closer
	r      io.ReaderAt
	size   int64

	groups []parquet.RowGroup
	group  int
	rows   parquet.Rows
	left   int64 // rows the current group still claims
	buf    []parquet.Row
	bufN   int
	bufAt  int
	row    int // rows returned (1-based number of the last)
	n      int // samples returned
}

// pqNode is one schema element.
type pqNode struct {
	name     string
	path     string
	rep      format.FieldRepetitionType
	leaf     bool
	typ      format.Type
	conv     *deprecated.ConvertedType
	logical  *format.LogicalType
	scale    int32
	children []*pqNode
	// levels at this node: the definition level a value must reach to be
	// present here, and this node's repetition depth (0 when no repeated
	// ancestor-or-self).
	defLevel int
	repDepth int
	column   int // leaf column index
	// fromRoot is a leaf's path: the nodes from the root's child down to
	// the leaf itself.
	fromRoot []*pqNode
}

// NewParquet reads Parquet from r (size bytes); name is used in errors.
func NewParquet(r io.ReaderAt, size int64, name string, opts Options) (p *Parquet, err error) {
	p = &Parquet{name: name, opts: opts}
	defer p.recoverInto(&err, 0)
	if err := checkFooter(r, size); err != nil {
		return nil, &RowError{File: name, Err: fmt.Errorf("%w: not a Parquet file: %w", ErrFormat, err)}
	}
	if err := checkMetadata(r, size); err != nil {
		return nil, &RowError{File: name, Err: fmt.Errorf("%w: %w", ErrFormat, err)}
	}
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, &RowError{File: name, Err: fmt.Errorf("%w: not a Parquet file: %w", ErrFormat, err)}
	}
	p.file = f
	md := f.Metadata()
	if err := p.buildSchema(md.Schema); err != nil {
		return nil, &RowError{File: name, Err: fmt.Errorf("%w: schema: %w", ErrFormat, err)}
	}
	if err := checkChunks(md, size, len(p.leaves)); err != nil {
		return nil, &RowError{File: name, Err: fmt.Errorf("%w: %w", ErrFormat, err)}
	}
	p.r, p.size = r, size
	p.groups = f.RowGroups()
	if len(p.groups) != len(md.RowGroups) {
		return nil, &RowError{File: name, Err: fmt.Errorf("%w: %d row groups in the metadata, %d readable", ErrFormat, len(md.RowGroups), len(p.groups))}
	}
	p.buf = make([]parquet.Row, maxRowsPerBuffer)
	return p, nil
}

// checkFooter checks the magic bytes and that the footer length fits the
// file before the library allocates a buffer of that length.
func checkFooter(r io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("%d bytes is too short", size)
	}
	var head, tail [8]byte
	if _, err := r.ReadAt(head[:4], 0); err != nil {
		return err
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return errors.New("no PAR1 magic bytes")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n == 0 || n > size-12 {
		return fmt.Errorf("footer length %d does not fit a %d-byte file", n, size)
	}
	return nil
}

// checkChunks bounds what the column chunks ask for before the library
// allocates for them.
func checkChunks(md *format.FileMetaData, size int64, columns int) error {
	if md.NumRows < 0 {
		return fmt.Errorf("negative row count %d", md.NumRows)
	}
	var total int64
	for i, rg := range md.RowGroups {
		if rg.NumRows < 0 {
			return fmt.Errorf("row group %d: negative row count %d", i, rg.NumRows)
		}
		total += rg.NumRows
		if len(rg.Columns) != columns {
			return fmt.Errorf("row group %d has %d column chunks, the schema %d columns", i, len(rg.Columns), columns)
		}
		for j, c := range rg.Columns {
			m := c.MetaData
			if m.TotalCompressedSize < 0 || m.TotalCompressedSize > min(size, maxChunkBytes) ||
				m.TotalUncompressedSize < 0 || m.TotalUncompressedSize > maxChunkBytes {
				return fmt.Errorf("row group %d column %d: chunk sizes %d/%d out of range", i, j, m.TotalCompressedSize, m.TotalUncompressedSize)
			}
			if m.DataPageOffset < 0 || m.DataPageOffset >= size || m.DictionaryPageOffset < 0 || m.DictionaryPageOffset >= size {
				return fmt.Errorf("row group %d column %d: page offset outside the file", i, j)
			}
			if m.NumValues < 0 {
				return fmt.Errorf("row group %d column %d: negative value count", i, j)
			}
		}
	}
	if total != md.NumRows {
		return fmt.Errorf("row groups hold %d rows, the footer says %d", total, md.NumRows)
	}
	return nil
}

func (p *Parquet) buildSchema(elems []format.SchemaElement) error {
	if len(elems) == 0 {
		return errors.New("empty schema")
	}
	if len(elems) > maxColumns*4 {
		return fmt.Errorf("%d schema elements (at most %d)", len(elems), maxColumns*4)
	}
	pos := 0
	var stack []*pqNode // the nodes from the root's child to the current one
	var build func(depth int, parent *pqNode) (*pqNode, error)
	build = func(depth int, parent *pqNode) (*pqNode, error) {
		if pos >= len(elems) {
			return nil, errors.New("schema ends inside a group")
		}
		if depth > maxSchemaDepth {
			return nil, fmt.Errorf("nested deeper than %d", maxSchemaDepth)
		}
		e := elems[pos]
		pos++
		n := &pqNode{name: e.Name, conv: e.ConvertedType, logical: e.LogicalType}
		if e.Scale != nil {
			n.scale = *e.Scale
		}
		if parent != nil {
			if e.RepetitionType == nil {
				return nil, fmt.Errorf("field %q has no repetition", e.Name)
			}
			n.rep = *e.RepetitionType
			n.defLevel, n.repDepth = parent.defLevel, parent.repDepth
			switch n.rep {
			case format.Required:
			case format.Optional:
				n.defLevel++
			case format.Repeated:
				n.defLevel++
				n.repDepth++
			default:
				return nil, fmt.Errorf("field %q: bad repetition %d", e.Name, n.rep)
			}
			n.path = e.Name
			if parent.path != "" {
				n.path = parent.path + "." + e.Name
			}
		}
		if e.NumChildren == 0 && parent != nil {
			if e.Type == nil {
				return nil, fmt.Errorf("leaf %q has no type", n.path)
			}
			n.leaf, n.typ, n.column = true, *e.Type, len(p.leaves)
			n.fromRoot = append(append([]*pqNode(nil), stack...), n)
			p.leaves = append(p.leaves, n)
			if len(p.leaves) > maxColumns {
				return nil, fmt.Errorf("more than %d columns", maxColumns)
			}
			return n, nil
		}
		if e.NumChildren < 0 || int(e.NumChildren) > len(elems)-pos {
			return nil, fmt.Errorf("group %q claims %d children", e.Name, e.NumChildren)
		}
		if parent != nil {
			stack = append(stack, n)
			defer func() { stack = stack[:len(stack)-1] }()
		}
		for i := 0; i < int(e.NumChildren); i++ {
			c, err := build(depth+1, n)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
		}
		return n, nil
	}
	root, err := build(0, nil)
	if err != nil {
		return err
	}
	if pos != len(elems) {
		return fmt.Errorf("%d schema elements after the root's children", len(elems)-pos)
	}
	if len(p.leaves) == 0 {
		return errors.New("no columns")
	}
	p.root = root
	return nil
}

// recoverInto turns a panic of the parquet library into an error.
func (p *Parquet) recoverInto(err *error, row int) {
	if r := recover(); r != nil {
		stack := string(debug.Stack())
		if i := strings.Index(stack, "parquet-go"); i >= 0 {
			stack = stack[i:]
			if j := strings.IndexByte(stack, '\n'); j >= 0 {
				stack = stack[:j]
			}
		} else {
			stack = ""
		}
		*err = &RowError{File: p.name, Row: row, Err: fmt.Errorf("%w: the parquet reader failed on the file (corrupt?): panic: %v %s", ErrFormat, r, stack)}
	}
}

// Next implements Reader.
func (p *Parquet) Next(ctx context.Context) (agentloop.Sample, error) {
	if p.opts.Limit > 0 && p.n >= p.opts.Limit {
		return agentloop.Sample{}, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return agentloop.Sample{}, err
	}
	raw, err := p.nextRow()
	if err != nil {
		return agentloop.Sample{}, err
	}
	p.row++
	row, err := p.assembleSafe(raw)
	if err != nil {
		return agentloop.Sample{}, rowError(p.name, p.row, err)
	}
	s, hasIndex, err := SampleFromRow(row, p.opts)
	if err != nil {
		return agentloop.Sample{}, rowError(p.name, p.row, err)
	}
	if !hasIndex {
		s.Index = p.row - 1
	}
	p.n++
	return s, nil
}

// nextRow returns the next raw row, reading the row groups in order.
func (p *Parquet) nextRow() (row parquet.Row, err error) {
	defer p.recoverInto(&err, p.row+1)
	for p.bufAt >= p.bufN {
		if p.rows == nil || p.left == 0 {
			if p.rows != nil {
				_ = p.rows.Close()
				p.rows = nil
			}
			if p.group >= len(p.groups) {
				return nil, io.EOF
			}
			g := p.groups[p.group]
			// Pages are checked a row group at a time, when it is reached,
			// so that the first rows come without a pass over the file.
			if err := checkGroupPages(p.r, p.size, &p.file.Metadata().RowGroups[p.group]); err != nil {
				return nil, &RowError{File: p.name, Row: p.row + 1, Err: fmt.Errorf("%w: row group %d: %w", ErrFormat, p.group, err)}
			}
			p.group++
			p.left = g.NumRows()
			if p.left == 0 {
				continue
			}
			p.rows = g.Rows()
		}
		want := int(min(int64(len(p.buf)), p.left))
		n, err := p.rows.ReadRows(p.buf[:want])
		if n == 0 {
			// A group that ends before its row count, or a reader that
			// makes no progress, is a corrupt file: never loop on it.
			if err == nil || errors.Is(err, io.EOF) {
				err = fmt.Errorf("row group %d ends after fewer rows than its metadata claims", p.group-1)
			}
			return nil, &RowError{File: p.name, Row: p.row + 1, Err: fmt.Errorf("%w: %w", ErrFormat, err)}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, &RowError{File: p.name, Row: p.row + 1, Err: fmt.Errorf("%w: %w", ErrFormat, err)}
		}
		p.left -= int64(n)
		p.bufN, p.bufAt = n, 0
	}
	row = p.buf[p.bufAt]
	p.bufAt++
	return row, nil
}

// Close implements Reader.
func (p *Parquet) Close() (err error) {
	defer p.recoverInto(&err, 0)
	if p.rows != nil {
		_ = p.rows.Close()
		p.rows = nil
	}
	if p.closer != nil {
		c := p.closer
		p.closer = nil
		return c.Close()
	}
	return nil
}

// assembleSafe is assemble with the parquet library's value accessors'
// panics (on values that disagree with their column) recovered.
func (p *Parquet) assembleSafe(raw parquet.Row) (row map[string]any, err error) {
	defer p.recoverInto(&err, p.row)
	return p.assemble(raw)
}

// assemble builds the row's value tree: groups become map[string]any,
// repeated fields []any, then list and map annotations are applied.
func (p *Parquet) assemble(raw parquet.Row) (map[string]any, error) {
	budget := p.opts.maxRow()
	// Values of one column are contiguous and in column order.
	start := 0
	tree := map[string]any{}
	for start < len(raw) {
		c := raw[start].Column()
		end := start
		for end < len(raw) && raw[end].Column() == c {
			end++
		}
		if c < 0 || c >= len(p.leaves) {
			return nil, fmt.Errorf("%w: value for column %d of %d", ErrFormat, c, len(p.leaves))
		}
		if err := p.insertColumn(tree, p.leaves[c], raw[start:end], &budget); err != nil {
			return nil, err
		}
		start = end
	}
	v, err := convert(p.root, tree, 0)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	return m, nil
}

// insertColumn places one leaf column's values of a row into the tree.
func (p *Parquet) insertColumn(tree map[string]any, leaf *pqNode, vals []parquet.Value, budget *int) error {
	path := leaf.fromRoot
	idx := make([]int, leaf.repDepth+1) // current element per repetition depth
	for k, v := range vals {
		r, d := v.RepetitionLevel(), v.DefinitionLevel()
		if r > leaf.repDepth || d > leaf.defLevel || (k == 0) != (r == 0) {
			return &fieldError{column: leaf.path, err: fmt.Errorf("%w: levels r=%d d=%d out of range (max r=%d d=%d)", ErrFormat, r, d, leaf.repDepth, leaf.defLevel)}
		}
		for j := 1; j <= leaf.repDepth; j++ {
			switch {
			case j == r:
				idx[j]++
			case j > r:
				idx[j] = 0
			}
		}
		if *budget -= 16; *budget < 0 {
			return &fieldError{column: leaf.path, err: fmt.Errorf("%w: row larger than %d bytes", ErrFormat, p.opts.maxRow())}
		}
		var cur any = tree
		for i, n := range path {
			m := cur.(map[string]any)
			last := i == len(path)-1
			if d < n.defLevel {
				// Not defined at this node: a null, or an empty list.
				if _, set := m[n.name]; !set {
					if n.rep == format.Repeated {
						m[n.name] = []any{}
					} else {
						m[n.name] = nil
					}
				}
				break
			}
			if n.rep == format.Repeated {
				l, _ := m[n.name].([]any)
				at := idx[n.repDepth]
				if at > len(l) {
					return &fieldError{column: leaf.path, err: fmt.Errorf("%w: repetition levels skip an element", ErrFormat)}
				}
				if at == len(l) {
					var elem any
					if !last {
						elem = map[string]any{}
					}
					l = append(l, elem)
					m[n.name] = l
				}
				if last {
					x, err := leafValue(n, v, budget)
					if err != nil {
						return err
					}
					l[at] = x
					break
				}
				next, ok := l[at].(map[string]any)
				if !ok {
					return &fieldError{column: leaf.path, err: fmt.Errorf("%w: inconsistent levels", ErrFormat)}
				}
				cur = next
				continue
			}
			if last {
				x, err := leafValue(n, v, budget)
				if err != nil {
					return err
				}
				m[n.name] = x
				break
			}
			next, ok := m[n.name].(map[string]any)
			if !ok {
				if m[n.name] != nil {
					return &fieldError{column: leaf.path, err: fmt.Errorf("%w: inconsistent levels", ErrFormat)}
				}
				next = map[string]any{}
				m[n.name] = next
			}
			cur = next
		}
	}
	return nil
}

// leafValue converts one primitive value as JSON would hold it.
func leafValue(n *pqNode, v parquet.Value, budget *int) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	// The value's own kind, not the schema's type, says how to read it: a
	// corrupt file can disagree with its schema.
	switch v.Kind() {
	case parquet.Boolean:
		return v.Boolean(), nil
	case parquet.Int32:
		if isDecimal(n) {
			return decimal(big.NewInt(int64(v.Int32())), n.scale), nil
		}
		return float64(v.Int32()), nil
	case parquet.Int64:
		if isDecimal(n) {
			return decimal(big.NewInt(v.Int64()), n.scale), nil
		}
		return int64Value(v.Int64()), nil
	case parquet.Float:
		return jsonFloat(float64(v.Float())), nil
	case parquet.Double:
		return jsonFloat(v.Double()), nil
	case parquet.Int96:
		return v.Int96().String(), nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		if *budget -= len(b); *budget < 0 {
			return nil, &fieldError{column: n.path, err: fmt.Errorf("%w: row larger than the row limit", ErrFormat)}
		}
		if isDecimal(n) {
			return decimal(twosComplement(b), n.scale), nil
		}
		if utf8.Valid(b) {
			return string(b), nil
		}
		// Binary data (verl's images column: {bytes, path}) stays bytes.
		return bytes.Clone(b), nil
	}
	return nil, &fieldError{column: n.path, err: fmt.Errorf("%w: unknown value kind %v", ErrFormat, v.Kind())}
}

func isDecimal(n *pqNode) bool {
	return (n.logical != nil && n.logical.Decimal != nil) || (n.conv != nil && *n.conv == deprecated.Decimal)
}

func twosComplement(b []byte) *big.Int {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return x
}

func decimal(unscaled *big.Int, scale int32) any {
	if scale < 0 || scale > 64 {
		return unscaled.String()
	}
	r := new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	f, _ := r.Float64()
	return f
}

// int64Value is a float64, as encoding/json gives numbers, when exact;
// larger values keep their digits as a string.
func int64Value(x int64) any {
	if x >= -(1<<53) && x <= 1<<53 {
		return float64(x)
	}
	return strconv.FormatInt(x, 10)
}

func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil // JSON has no such numbers; verl's rows never hold them
	}
	return f
}

func isListNode(n *pqNode) bool {
	return (n.logical != nil && n.logical.List != nil) || (n.conv != nil && *n.conv == deprecated.List)
}

func isMap(n *pqNode) bool {
	return (n.logical != nil && n.logical.Map != nil) ||
		(n.conv != nil && (*n.conv == deprecated.Map || *n.conv == deprecated.MapKeyValue))
}

// convert applies list and map annotations to the assembled tree of node n.
func convert(n *pqNode, v any, depth int) (any, error) {
	if v == nil || n.leaf {
		return v, nil
	}
	if depth > maxSchemaDepth {
		return nil, &fieldError{column: n.path, err: fmt.Errorf("%w: nested too deeply", ErrFormat)}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &fieldError{column: n.path, err: fmt.Errorf("%w: inconsistent levels", ErrFormat)}
	}
	switch {
	case isListNode(n) && len(n.children) == 1 && n.children[0].rep == format.Repeated:
		return convertList(n, m, depth)
	case isMap(n) && len(n.children) == 1 && n.children[0].rep == format.Repeated:
		return convertMap(n, m, depth)
	}
	for _, c := range n.children {
		x, ok := m[c.name]
		if !ok {
			continue
		}
		y, err := convertField(c, x, depth+1)
		if err != nil {
			return nil, err
		}
		m[c.name] = y
	}
	return m, nil
}

// convertField converts a field's value; a repeated field not under a LIST
// annotation is itself a list (legacy 1-level encoding).
func convertField(c *pqNode, x any, depth int) (any, error) {
	if c.rep != format.Repeated {
		return convert(c, x, depth)
	}
	l, _ := x.([]any)
	for i, e := range l {
		y, err := convert(c, e, depth+1)
		if err != nil {
			return nil, err
		}
		l[i] = y
	}
	if l == nil {
		l = []any{}
	}
	return l, nil
}

// convertList reads a LIST-annotated group under the backward-compatibility
// rules of the Parquet format (LogicalTypes.md, "Lists"): the repeated
// child is the element itself when it is a primitive, a group with several
// fields, or a one-field group named "array" or "<list>_tuple"; otherwise
// its one field is the element (the standard 3-level form).
func convertList(n *pqNode, m map[string]any, depth int) (any, error) {
	rep := n.children[0]
	items, _ := m[rep.name].([]any)
	out := make([]any, 0, len(items))
	elemIsRep := rep.leaf || len(rep.children) != 1 || rep.name == "array" || rep.name == n.name+"_tuple"
	for _, it := range items {
		if elemIsRep {
			y, err := convert(rep, it, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, y)
			continue
		}
		em, _ := it.(map[string]any)
		if em == nil {
			out = append(out, nil)
			continue
		}
		el := rep.children[0]
		y, err := convertField(el, em[el.name], depth+2)
		if err != nil {
			return nil, err
		}
		out = append(out, y)
	}
	return out, nil
}

// convertMap reads a MAP (or MAP_KEY_VALUE) group: a repeated group of key
// and value. Keys become strings (JSON object keys).
func convertMap(n *pqNode, m map[string]any, depth int) (any, error) {
	kv := n.children[0]
	if kv.leaf || len(kv.children) == 0 || len(kv.children) > 2 {
		return nil, &fieldError{column: n.path, err: fmt.Errorf("%w: a MAP needs a repeated group of key and value", ErrFormat)}
	}
	items, _ := m[kv.name].([]any)
	out := make(map[string]any, len(items))
	keyNode := kv.children[0]
	for _, it := range items {
		em, _ := it.(map[string]any)
		if em == nil {
			continue
		}
		var key string
		switch k := em[keyNode.name].(type) {
		case string:
			key = k
		case float64, int64:
			key = numString(k)
		case bool:
			key = strconv.FormatBool(k)
		case nil:
			return nil, &fieldError{column: n.path, err: fmt.Errorf("%w: a map key is null", ErrFormat)}
		default:
			return nil, &fieldError{column: n.path, err: fmt.Errorf("%w: map keys must be strings or numbers", ErrFormat)}
		}
		var val any
		if len(kv.children) == 2 {
			vn := kv.children[1]
			y, err := convertField(vn, em[vn.name], depth+2)
			if err != nil {
				return nil, err
			}
			val = y
		}
		out[key] = val
	}
	return out, nil
}
