package httpapi

import (
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/server/internal/wire"
)

// errBatch marks a list of lists where one list of ids was expected.
var errBatch = errors.New("batched prompts are not supported: send one request per prompt")

// parseIntList reads a JSON array of 32-bit integers. It is the hot path of
// every request (prompts are thousands of ids), so it scans the bytes
// directly instead of going through reflection; data has already been
// checked to be valid JSON by the enclosing decode.
func parseIntList(data []byte) ([]int32, error) {
	i := wire.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, errors.New("expected a list of token ids")
	}
	i = wire.SkipSpace(data, i+1)
	ids := make([]int32, 0, len(data)/6+1)
	if i < len(data) && data[i] == ']' {
		return ids, nil
	}
	for n := 0; ; n++ {
		i = wire.SkipSpace(data, i)
		if i < len(data) && data[i] == '[' {
			return nil, errBatch
		}
		start := i
		neg := i < len(data) && data[i] == '-'
		if neg {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return nil, fmt.Errorf("element %d is not an integer token id", n)
		}
		var v int64
		for ; i < len(data) && data[i] >= '0' && data[i] <= '9'; i++ {
			v = v*10 + int64(data[i]-'0')
			if v > 1<<31 {
				return nil, fmt.Errorf("element %d (%.20s…) does not fit a 32-bit token id", n, data[start:])
			}
		}
		if i < len(data) && (data[i] == '.' || data[i] == 'e' || data[i] == 'E') {
			return nil, fmt.Errorf("element %d is not an integer token id", n)
		}
		if neg {
			v = -v
		}
		if v > 1<<31-1 {
			return nil, fmt.Errorf("element %d (%d) does not fit a 32-bit token id", n, v)
		}
		ids = append(ids, int32(v))
		i = wire.SkipSpace(data, i)
		if i >= len(data) {
			return nil, errors.New("unterminated list")
		}
		switch data[i] {
		case ',':
			i++
		case ']':
			if j := wire.SkipSpace(data, i+1); j != len(data) {
				return nil, errors.New("unexpected data after the list")
			}
			return ids, nil
		default:
			return nil, fmt.Errorf("element %d: unexpected %q", n, data[i])
		}
	}
}
