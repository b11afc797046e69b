package cuda

import (
	"errors"
	"fmt"
)

// check refuses negative sizes: zero means the default, but a negative
// value is a mistake (a flag's sign, a subtraction gone wrong) that would
// otherwise be replaced by the default without a word. The error names
// every such option.
func (o Options) check() error {
	var bad []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Threads", int64(o.Threads)},
		{"BlockSize", int64(o.BlockSize)},
		{"KVBlocks", int64(o.KVBlocks)},
		{"KVMemory", o.KVMemory},
		{"MaxBatchTokens", int64(o.MaxBatchTokens)},
		{"MaxSeqs", int64(o.MaxSeqs)},
		{"MaxContext", int64(o.MaxContext)},
	} {
		if f.v < 0 {
			bad = append(bad, fmt.Errorf("cuda: Options.%s %d is negative (0 means the default)", f.name, f.v))
		}
	}
	return errors.Join(bad...)
}
