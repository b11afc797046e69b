package dataset

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
)

const verlSystem = "You are a math expert. You are given a question and you need to solve it step by step. " +
	"Reasoning step by step before any tool call. " +
	"You should use the `calc_gsm8k_reward` tool after step by step solving the question, " +
	"before generate final answer at least once and refine your answer if necessary. " +
	"Put your final answer in the format of `#### <answer>`."

const follow = " Let's think step by step and output the final answer after `####`."

var gsm8kQuestions = []struct{ q, gt string }{
	{"Natalia sold clips to 48 of her friends in April, and then she sold half as many clips to her friends in May. How many clips did Natalia sell altogether in April and May?", "72"},
	{"Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?", "10"},
	{"Betty is saving money for a new wallet which costs $100. Betty has only half of the money she needs. How much more money does Betty need to buy the wallet? \u00e9\u00e8 \u4f60\u597d", "5"},
}

// TestRealWriters reads files written by other Parquet writers (generated
// by the scripts next to them in testdata) and checks every field of every
// sample.
func TestRealWriters(t *testing.T) {
	duck := func() []agentloop.Sample {
		var out []agentloop.Sample
		for i, r := range gsm8kQuestions {
			out = append(out, agentloop.Sample{
				Index:             i,
				Messages:          []chat.Message{{Role: "system", Content: verlSystem}, {Role: "user", Content: r.q + follow}},
				ToolsKwargs:       map[string]map[string]any{"calc_gsm8k_reward": {"ground_truth": r.gt}},
				InteractionKwargs: map[string]any{"query": r.q + follow, "ground_truth": r.gt},
				DataSource:        "openai/gsm8k", GroundTruth: r.gt,
				Extra: map[string]any{"split": "train", "answer": "... #### " + r.gt, "question": r.q, "need_tools_kwargs": true},
			})
		}
		return out
	}()
	duckMap := func() []agentloop.Sample {
		var out []agentloop.Sample
		for i, r := range gsm8kQuestions {
			out = append(out, agentloop.Sample{
				Index:             100 + i,
				Messages:          []chat.Message{{Role: "user", Content: r.q}},
				Tools:             []string{"calc_gsm8k_reward"},
				ToolsKwargs:       map[string]map[string]any{"calc_gsm8k_reward": {"ground_truth": r.gt}},
				InteractionKwargs: map[string]any{"ground_truth": r.gt},
				DataSource:        "openai/gsm8k", GroundTruth: r.gt,
			})
		}
		return out
	}()
	arrowRS := func() []agentloop.Sample {
		qs := [][2]string{{"What is 2+2?", "4"}, {"What is 3*3? \u00fc\u00f1\u00ee", "9"}, {"How many legs do 2 cats have?", "8"}}
		var out []agentloop.Sample
		for i, r := range qs {
			s := agentloop.Sample{
				Index:       i,
				Messages:    []chat.Message{{Role: "system", Content: "Answer with #### N."}, {Role: "user", Content: r[0]}},
				Tools:       []string{"calc_gsm8k_reward"},
				ToolsKwargs: map[string]map[string]any{"calc_gsm8k_reward": {"ground_truth": r[1]}},
				DataSource:  "openai/gsm8k", GroundTruth: r[1],
				Extra: map[string]any{"split": "test"},
			}
			if i == 2 {
				s.Tools = nil // a null list: all tools
			}
			out = append(out, s)
		}
		return out
	}()
	pqjs := func() []agentloop.Sample {
		qs := [][2]string{{"What is 2+2?", "4"}, {"What is 10-3?", "7"}, {"What is 6/2?", "3"}}
		var out []agentloop.Sample
		for i, r := range qs {
			s := agentloop.Sample{
				Index:      20 + i,
				Messages:   []chat.Message{{Role: "system", Content: "Answer with #### N."}, {Role: "user", Content: r[0]}},
				Tools:      []string{"calc_gsm8k_reward"},
				DataSource: "openai/gsm8k", GroundTruth: r[1],
				Extra: map[string]any{"split": "test"},
			}
			if i == 2 {
				s.Tools = []string{} // an empty list: no tools
			}
			out = append(out, s)
		}
		return out
	}()
	for file, want := range map[string][]agentloop.Sample{
		"gsm8k_duckdb.parquet":     duck,    // DuckDB 1.5.6: LIST and structs as converted types only
		"gsm8k_duckdb_map.parquet": duckMap, // DuckDB: MAP columns, zstd, one row per row group, nulls
		"gsm8k_arrow_rs.parquet":   arrowRS, // Arrow-rs (parquet-wasm 0.8.0): "item" elements, MAP, snappy
		"gsm8k_parquetjs.parquet":  pqjs,    // parquetjs-lite: bare repeated fields (legacy 1-level lists)
	} {
		t.Run(file, func(t *testing.T) {
			got, err := ReadAll(context.Background(), Options{}, filepath.Join("testdata", file))
			require.NoError(t, err)
			require.Equal(t, want, got)
			// Limit stops early.
			got, err = ReadAll(context.Background(), Options{Limit: 2}, filepath.Join("testdata", file))
			require.NoError(t, err)
			require.Equal(t, want[:2], got)
		})
	}
}

// annotated adds a logical/converted type to a node (parquet-go has no
// API for the legacy list forms).
type annotated struct {
	parquet.Node
	l *format.LogicalType
	c *deprecated.ConvertedType
}

func (a annotated) Type() parquet.Type { return annotatedType{a.Node.Type(), a.l, a.c} }

type annotatedType struct {
	parquet.Type
	l *format.LogicalType
	c *deprecated.ConvertedType
}

func (t annotatedType) LogicalType() *format.LogicalType         { return t.l }
func (t annotatedType) ConvertedType() *deprecated.ConvertedType { return t.c }

func listOf(n parquet.Node) parquet.Node {
	c := deprecated.List
	return annotated{n, &format.LogicalType{List: &format.ListType{}}, &c}
}

func mapKV(n parquet.Node) parquet.Node {
	c := deprecated.MapKeyValue
	return annotated{n, nil, &c}
}

// writeRows writes rows with explicit levels under a schema.
func writeRows(t *testing.T, root parquet.Node, rows []parquet.Row) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, parquet.NewSchema("spark_schema", root))
	_, err := w.WriteRows(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func sv(v string, r, d, c int) parquet.Value { return parquet.ValueOf(v).Level(r, d, c) }
func null(r, d, c int) parquet.Value         { return parquet.Value{}.Level(r, d, c) }

func readBytes(t *testing.T, data []byte) ([]agentloop.Sample, error) {
	t.Helper()
	r, err := NewParquet(bytes.NewReader(data), int64(len(data)), "x.parquet", Options{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []agentloop.Sample
	for {
		s, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
}

// TestLegacyListForms covers the list forms of the Parquet format's
// backward-compatibility rules (parquet-format LogicalTypes.md, "Lists":
// the 2-level forms parquet-mr's AvroSchemaConverter and Thrift wrote) and
// MAP_KEY_VALUE, on files written with explicit levels.
func TestLegacyListForms(t *testing.T) {
	msg := parquet.Group{"role": parquet.String(), "content": parquet.String()}
	one := parquet.Group{"content": parquet.String()}
	user := []chat.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}
	// Columns are in field-name order: prompt's leaves, then tool_selection.
	for _, c := range []struct {
		name  string
		root  parquet.Node
		rows  []parquet.Row
		msgs  []chat.Message
		tools []string
	}{
		{
			// parquet-mr (Avro, old default): repeated group "array" with
			// several fields is the element.
			name: "2-level, multi-field group",
			root: parquet.Group{"prompt": parquet.Optional(listOf(parquet.Group{"array": parquet.Repeated(msg)}))},
			rows: []parquet.Row{{sv("s", 0, 2, 0), sv("u", 1, 2, 0), sv("system", 0, 2, 1), sv("user", 1, 2, 1)}},
			msgs: user,
		},
		{
			// One-field group named "array": the group is the element.
			name: `2-level, one-field group named "array"`,
			root: parquet.Group{"prompt": parquet.Optional(listOf(parquet.Group{"array": parquet.Repeated(one)})),
				"tool_selection": parquet.Optional(listOf(parquet.Group{"tool_selection_tuple": parquet.Repeated(parquet.Group{"n": parquet.String()})}))},
			rows: []parquet.Row{{sv("u", 0, 2, 0), null(0, 1, 1)}},
			msgs: []chat.Message{{Content: "u"}},
		},
		{
			// A repeated primitive is the element (required elements).
			name:  "2-level, repeated primitive",
			root:  parquet.Group{"prompt": parquet.Optional(listOf(parquet.Group{"list": parquet.Repeated(parquet.Group{"element": msg})})), "tool_selection": parquet.Optional(listOf(parquet.Group{"t": parquet.Repeated(parquet.String())}))},
			rows:  []parquet.Row{{sv("u", 0, 2, 0), sv("user", 0, 2, 1), sv("a", 0, 2, 2), sv("b", 1, 2, 2)}},
			msgs:  []chat.Message{{Role: "user", Content: "u"}},
			tools: []string{"a", "b"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readBytes(t, writeRows(t, c.root, c.rows))
			if c.msgs[0].Role == "" {
				// {content} messages have no role: the rule is still
				// applied (the error names the role column).
				require.ErrorContains(t, err, "prompt[0].role")
				return
			}
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, c.msgs, got[0].Messages)
			require.Equal(t, c.tools, got[0].Tools)
		})
	}

	// MAP_KEY_VALUE (the legacy map annotation) of create kwargs.
	root := parquet.Group{
		"prompt":       parquet.Optional(listOf(parquet.Group{"array": parquet.Repeated(msg)})),
		"tools_kwargs": parquet.Optional(mapKV(parquet.Group{"map": parquet.Repeated(parquet.Group{"key": parquet.String(), "value": parquet.Optional(parquet.Group{"create_kwargs": parquet.Optional(mapKV(parquet.Group{"map": parquet.Repeated(parquet.Group{"key": parquet.String(), "value": parquet.Optional(parquet.String())})}))})})})),
	}
	// Columns: prompt.array.content, prompt.array.role, tools_kwargs.map.key,
	// tools_kwargs.map.value.create_kwargs.map.key, ...value.
	rows := []parquet.Row{{sv("u", 0, 2, 0), sv("user", 0, 2, 1), sv("calc", 0, 2, 2), sv("ground_truth", 0, 5, 3), sv("7", 0, 6, 4)}}
	got, err := readBytes(t, writeRows(t, root, rows))
	require.NoError(t, err)
	require.Equal(t, map[string]map[string]any{"calc": {"ground_truth": "7"}}, got[0].ToolsKwargs)
}

func TestParquetErrors(t *testing.T) {
	good, err := os.ReadFile("testdata/gsm8k_duckdb.parquet")
	require.NoError(t, err)
	for name, data := range map[string][]byte{
		"empty":       nil,
		"not parquet": []byte("PAR1 this is not a parquet file PAR1"),
		"truncated":   good[:len(good)/2],
		"no footer":   good[:len(good)-8],
	} {
		_, err := readBytes(t, data)
		require.Error(t, err, name)
		require.ErrorIs(t, err, ErrFormat, name)
		var re *RowError
		require.ErrorAs(t, err, &re, name)
		require.Equal(t, "x.parquet", re.File)
	}
	// A row that is not a sample names its row and column.
	root := parquet.Group{"prompt": parquet.Optional(listOf(parquet.Group{"array": parquet.Repeated(parquet.Group{"role": parquet.String(), "content": parquet.Int(64)})}))}
	_, err = readBytes(t, writeRows(t, root, []parquet.Row{
		{parquet.ValueOf(int64(1)).Level(0, 2, 0), sv("user", 0, 2, 1)},
	}))
	require.EqualError(t, err, "x.parquet: row 1: column prompt[0].content: dataset: bad file: must be a string, got a number")
}

// FuzzParquet mutates real files (every writer's fixture): the reader must
// return samples or an error, never panic, hang or allocate without bound.
func FuzzParquet(f *testing.F) {
	for _, name := range []string{"gsm8k_duckdb.parquet", "gsm8k_duckdb_map.parquet", "gsm8k_arrow_rs.parquet", "gsm8k_parquetjs.parquet"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var openErr error
		// SECURITY.md's promise: no input makes the reader allocate more
		// than 100 MB, whatever its headers claim.
		n := allocated(func() { openErr = readParquet(data) })
		if openErr != nil {
			require.ErrorIs(t, openErr, ErrFormat)
		}
		if n > maxFuzzAlloc {
			t.Fatalf("reading a %d-byte file allocated %d bytes (limit %d)", len(data), n, maxFuzzAlloc)
		}
	})
}

// maxFuzzAlloc is the allocation bound SECURITY.md states for one file.
const maxFuzzAlloc = 100 << 20

// readParquet opens data and reads up to 1000 rows; it returns the error of
// NewParquet (a row error ends the read).
func readParquet(data []byte) error {
	r, err := NewParquet(bytes.NewReader(data), int64(len(data)), "fuzz.parquet", Options{MaxRowBytes: 1 << 20})
	if err != nil {
		return err
	}
	defer r.Close()
	for i := 0; i < 1000; i++ {
		if _, err := r.Next(context.Background()); err != nil {
			return nil
		}
	}
	return nil
}

// allocated is the number of bytes the process allocated while fn ran; it
// counts everything, so it is exact only while nothing else runs (fuzz
// inputs run one at a time in a worker).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The allocation oracle of FuzzParquet measures: reading a real file counts
// its allocations, and an allocation of the size a lying header asks for is
// over the bound.
func TestParquetAllocOracle(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gsm8k_duckdb.parquet"))
	require.NoError(t, err)
	n := allocated(func() { require.NoError(t, readParquet(data)) })
	require.Positive(t, n)
	require.Less(t, n, uint64(maxFuzzAlloc))
	var sink []byte
	n = allocated(func() { sink = make([]byte, maxFuzzAlloc+1) })
	require.Greater(t, n, uint64(maxFuzzAlloc))
	_ = sink
}
