package wire

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/server"
)

// MaxRoutingValues bounds a decoded routing payload (positions × layers ×
// experts per token): 1<<28 int16 values are 512 MiB, far past a 128k
// context of a 64-layer top-8 model (64 M values), so only a corrupt or
// hostile payload reaches it.
const MaxRoutingValues = 1 << 28

// routingDtype is a little-endian integer element type of a routing payload.
type routingDtype struct {
	size   int
	signed bool
}

// Element types by numpy name: SGLang's routed_experts_dtype and the
// descr of vLLM's .npy header ('<' or '|' byte order, then kind and size).
var routingDtypes = map[string]routingDtype{
	"int32": {4, true}, "uint8": {1, false}, "uint16": {2, false}, "int16": {2, true}, "uint32": {4, false}, "int8": {1, true},
	"i4": {4, true}, "u1": {1, false}, "u2": {2, false}, "i2": {2, true}, "u4": {4, false}, "i1": {1, true},
}

// decodeValues reads n little-endian integers of type dt as int16, the
// routing dtype verl trains with; an expert id outside int16 is an error.
func decodeValues(raw []byte, dt routingDtype) ([]int16, error) {
	if len(raw)%dt.size != 0 {
		return nil, fmt.Errorf("%d bytes are not whole %d-byte values", len(raw), dt.size)
	}
	n := len(raw) / dt.size
	if n > MaxRoutingValues {
		return nil, fmt.Errorf("%d values, more than the %d allowed", n, MaxRoutingValues)
	}
	out := make([]int16, n)
	for i := range out {
		var v int64
		b := raw[i*dt.size:]
		switch {
		case dt.size == 1 && dt.signed:
			v = int64(int8(b[0]))
		case dt.size == 1:
			v = int64(b[0])
		case dt.size == 2 && dt.signed:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		case dt.size == 2:
			v = int64(binary.LittleEndian.Uint16(b))
		case dt.signed:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		default:
			v = int64(binary.LittleEndian.Uint32(b))
		}
		if v < math.MinInt16 || v > math.MaxInt16 {
			return nil, fmt.Errorf("value %d at %d does not fit int16", v, i)
		}
		out[i] = int16(v)
	}
	return out, nil
}

// RoutingFromFlat decodes SGLang's meta_info.routed_experts: base64 of a
// flat row-major array of positions × layers × topk values, int32 unless
// meta_info.routed_experts_dtype names another type (sglang
// srt/layers/moe/routed_experts_capturer.py
// extract_routed_experts_from_meta_info). SGLang sends no shape, so layers
// and topk come from the model's config (num_hidden_layers,
// num_experts_per_tok).
func RoutingFromFlat(b64, dtype string, layers, topk int) (*server.Routing, error) {
	if layers <= 0 || topk <= 0 {
		return nil, fmt.Errorf("routed experts: the model's layers and experts per token are needed to read them (got %d and %d)", layers, topk)
	}
	if dtype == "" {
		dtype = "int32"
	}
	dt, ok := routingDtypes[strings.ToLower(strings.TrimSpace(dtype))]
	if !ok {
		return nil, fmt.Errorf("routed experts: unknown dtype %q", dtype)
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > MaxRoutingValues*dt.size {
		return nil, fmt.Errorf("routed experts: %d bytes of base64 is more than %d values", len(b64), MaxRoutingValues)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("routed experts: %w", err)
	}
	vals, err := decodeValues(raw, dt)
	if err != nil {
		return nil, fmt.Errorf("routed experts: %w", err)
	}
	r := &server.Routing{Layers: layers, TopK: topk, Experts: vals}
	if err := r.Check(); err != nil {
		return nil, err
	}
	return r, nil
}

// RoutingFromNPY decodes vLLM's choices[].routed_experts: base64 of a
// NumPy .npy file holding a C-order array of shape (positions, layers,
// topk), uint8 or uint16 as vLLM sends it (vllm entrypoints
// GenerateResponseChoice.routed_experts; decoded upstream by
// np.load(io.BytesIO(base64.b64decode(s)))). Format: NEP 1, versions 1–3.
func RoutingFromNPY(b64 string) (*server.Routing, error) {
	if base64.StdEncoding.DecodedLen(len(b64)) > 4*MaxRoutingValues+65536 {
		return nil, fmt.Errorf("routed experts: %d bytes of base64 is more than %d values", len(b64), MaxRoutingValues)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("routed experts: %w", err)
	}
	dt, shape, data, err := parseNPY(raw)
	if err != nil {
		return nil, fmt.Errorf("routed experts: .npy: %w", err)
	}
	if len(shape) != 3 {
		return nil, fmt.Errorf("routed experts: .npy shape %v, want (positions, layers, topk)", shape)
	}
	want := uint64(1)
	for _, d := range shape {
		want *= uint64(d)
		if want > MaxRoutingValues {
			return nil, fmt.Errorf("routed experts: .npy shape %v is more than %d values", shape, MaxRoutingValues)
		}
	}
	if uint64(len(data)) != want*uint64(dt.size) {
		return nil, fmt.Errorf("routed experts: .npy shape %v needs %d bytes, the file has %d", shape, want*uint64(dt.size), len(data))
	}
	vals, err := decodeValues(data, dt)
	if err != nil {
		return nil, fmt.Errorf("routed experts: %w", err)
	}
	if shape[1] == 0 || shape[2] == 0 {
		return nil, fmt.Errorf("routed experts: .npy shape %v has no layers or experts", shape)
	}
	return &server.Routing{Layers: shape[1], TopK: shape[2], Experts: vals}, nil
}

// parseNPY reads a .npy header: magic, version, header length, then a
// Python dict literal with 'descr', 'fortran_order' and 'shape'.
func parseNPY(raw []byte) (routingDtype, []int, []byte, error) {
	const magic = "\x93NUMPY"
	if len(raw) < 10 || string(raw[:6]) != magic {
		return routingDtype{}, nil, nil, fmt.Errorf("no .npy magic")
	}
	var hlen, off int
	switch raw[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(raw[8:10])), 10
	case 2, 3:
		if len(raw) < 12 {
			return routingDtype{}, nil, nil, fmt.Errorf("truncated header")
		}
		hlen, off = int(binary.LittleEndian.Uint32(raw[8:12])), 12
	default:
		return routingDtype{}, nil, nil, fmt.Errorf("unknown version %d.%d", raw[6], raw[7])
	}
	if hlen > 65536 || off+hlen > len(raw) {
		return routingDtype{}, nil, nil, fmt.Errorf("header length %d does not fit the %d-byte file", hlen, len(raw))
	}
	h := string(raw[off : off+hlen])
	descr, err := npyField(h, "descr")
	if err != nil {
		return routingDtype{}, nil, nil, err
	}
	descr = strings.Trim(descr, `'"`)
	if len(descr) < 2 || (descr[0] != '<' && descr[0] != '|') {
		return routingDtype{}, nil, nil, fmt.Errorf("descr %q: want a little-endian integer type", descr)
	}
	dt, ok := routingDtypes[descr[1:]]
	if !ok {
		return routingDtype{}, nil, nil, fmt.Errorf("descr %q: not an integer type of 1, 2 or 4 bytes", descr)
	}
	fo, err := npyField(h, "fortran_order")
	if err != nil {
		return routingDtype{}, nil, nil, err
	}
	if fo != "False" {
		return routingDtype{}, nil, nil, fmt.Errorf("fortran_order %s: want C order", fo)
	}
	sh, err := npyField(h, "shape")
	if err != nil {
		return routingDtype{}, nil, nil, err
	}
	sh = strings.TrimSpace(sh)
	if !strings.HasPrefix(sh, "(") || !strings.HasSuffix(sh, ")") {
		return routingDtype{}, nil, nil, fmt.Errorf("shape %q is not a tuple", sh)
	}
	var shape []int
	for _, p := range strings.Split(sh[1:len(sh)-1], ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(p, "L"))
		if err != nil || n < 0 {
			return routingDtype{}, nil, nil, fmt.Errorf("shape %q: bad dimension %q", sh, p)
		}
		shape = append(shape, n)
	}
	return dt, shape, raw[off+hlen:], nil
}

// npyField returns the text of key's value in a .npy header dict: a quoted
// string, a tuple or a bare word.
func npyField(h, key string) (string, error) {
	for _, q := range []string{"'", `"`} {
		i := strings.Index(h, q+key+q)
		if i < 0 {
			continue
		}
		rest := strings.TrimLeft(h[i+len(key)+2:], " ")
		if !strings.HasPrefix(rest, ":") {
			break
		}
		rest = strings.TrimLeft(rest[1:], " ")
		switch {
		case strings.HasPrefix(rest, "("):
			if j := strings.IndexByte(rest, ')'); j >= 0 {
				return rest[:j+1], nil
			}
		case strings.HasPrefix(rest, "'") || strings.HasPrefix(rest, `"`):
			if j := strings.IndexByte(rest[1:], rest[0]); j >= 0 {
				return rest[:j+2], nil
			}
		default:
			if j := strings.IndexAny(rest, ",}"); j >= 0 {
				return strings.TrimSpace(rest[:j]), nil
			}
		}
		break
	}
	return "", fmt.Errorf("header has no %q", key)
}
