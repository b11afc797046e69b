package wire

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRoutingGolden decodes routed-experts payloads NumPy wrote the way
// vLLM and SGLang send them (testdata/gen_routing.py).
func TestRoutingGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "routing.json"))
	require.NoError(t, err)
	var g struct {
		Cases []struct {
			Name, NPY, Flat, Dtype string
			Layers                 int `json:"layers"`
			Topk                   int `json:"topk"`
			Values                 []int16
		}
	}
	require.NoError(t, json.Unmarshal(data, &g))
	require.GreaterOrEqual(t, len(g.Cases), 9)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if c.NPY != "" {
				r, err := RoutingFromNPY(c.NPY)
				require.NoError(t, err)
				require.Equal(t, c.Layers, r.Layers)
				require.Equal(t, c.Topk, r.TopK)
				require.Equal(t, len(c.Values), len(r.Experts))
				if len(c.Values) > 0 {
					require.Equal(t, c.Values, r.Experts)
				}
				return
			}
			r, err := RoutingFromFlat(c.Flat, c.Dtype, c.Layers, c.Topk)
			require.NoError(t, err)
			require.Equal(t, c.Values, r.Experts)
			require.Equal(t, len(c.Values)/(c.Layers*c.Topk), r.Rows())
		})
	}
}

func TestRoutingErrors(t *testing.T) {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	npy := func(header string, body []byte) string {
		h := []byte("\x93NUMPY\x01\x00")
		h = append(h, byte(len(header)), byte(len(header)>>8))
		return b64(append(append(h, header...), body...))
	}
	for _, c := range []struct {
		name, in, want string
	}{
		{"not base64", "@@@", "illegal base64"},
		{"no magic", b64([]byte("hello world")), "no .npy magic"},
		{"big endian", npy("{'descr': '>u2', 'fortran_order': False, 'shape': (1, 1, 1), }", []byte{0, 1}), "little-endian"},
		{"float", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), }", make([]byte, 4)), "not an integer type"},
		{"fortran", npy("{'descr': '<u2', 'fortran_order': True, 'shape': (1, 1, 1), }", make([]byte, 2)), "C order"},
		{"two dims", npy("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 2), }", make([]byte, 4)), "want (positions, layers, topk)"},
		{"short data", npy("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 2, 2), }", make([]byte, 4)), "needs 16 bytes"},
		{"huge shape", npy("{'descr': '<u2', 'fortran_order': False, 'shape': (100000, 100000, 8), }", nil), "more than"},
		{"no shape", npy("{'descr': '<u2', 'fortran_order': False, }", nil), `no "shape"`},
		{"negative dim", npy("{'descr': '<u2', 'fortran_order': False, 'shape': (-1, 2, 2), }", nil), "bad dimension"},
	} {
		_, err := RoutingFromNPY(c.in)
		require.ErrorContains(t, err, c.want, c.name)
	}
	_, err := RoutingFromFlat(b64(make([]byte, 12)), "", 0, 2)
	require.ErrorContains(t, err, "layers and experts per token are needed")
	_, err = RoutingFromFlat(b64(make([]byte, 12)), "float16", 1, 1)
	require.ErrorContains(t, err, `unknown dtype "float16"`)
	_, err = RoutingFromFlat(b64(make([]byte, 12)), "", 2, 2)
	require.ErrorContains(t, err, "not whole rows")
	_, err = RoutingFromFlat(b64([]byte{0, 0, 1, 0}), "", 1, 1) // 65536
	require.ErrorContains(t, err, "does not fit int16")
}

func FuzzRoutingFromNPY(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "routing.json"))
	require.NoError(f, err)
	var g struct{ Cases []struct{ NPY string } }
	require.NoError(f, json.Unmarshal(data, &g))
	for _, c := range g.Cases {
		if raw, err := base64.StdEncoding.DecodeString(c.NPY); err == nil && len(raw) > 0 {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := RoutingFromNPY(base64.StdEncoding.EncodeToString(raw))
		if err != nil {
			return
		}
		require.NoError(t, r.Check())
		require.LessOrEqual(t, len(r.Experts), len(raw))
	})
}
