//go:build unix

package safetensors_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/safetensors"
)

// ExampleMapping_Changed maps a checkpoint and replaces it the safe way
// (WriteFile renames a new file over it: the mapping keeps the old bytes
// and Changed stays quiet); then maps the new file and changes it the
// unsafe way (in place), which Changed reports.
func ExampleMapping_Changed() {
	dir, err := os.MkdirTemp("", "safetensors-map-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, safetensors.SingleFile)
	write := func(v float32) error {
		return safetensors.WriteFile(path, []safetensors.Tensor{safetensors.F32Tensor("w", []int64{2}, []float32{v, v})}, nil)
	}
	mapDir := func() (*safetensors.Mapping, error) {
		set, err := safetensors.OpenDir(dir)
		if err != nil {
			return nil, err
		}
		defer set.Close() // the mapping outlives the set
		return set.Map()
	}

	if err := write(1); err != nil {
		fmt.Println(err)
		return
	}
	m, err := mapDir()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	if err := write(2); err != nil {
		fmt.Println(err)
		return
	}
	_, b, _ := m.Tensor("w")
	fmt.Println("renamed over:", m.Changed(), b[:4]) // 1.0 as little-endian float32

	m2, err := mapDir()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m2.Close()
	if err := os.Truncate(path, 0); err != nil { // in place, as a writer opening it with O_TRUNC
		fmt.Println(err)
		return
	}
	fmt.Println("truncated in place:", errors.Is(m2.Changed(), safetensors.ErrChanged))
	// Output:
	// renamed over: <nil> [0 0 128 63]
	// truncated in place: true
}
