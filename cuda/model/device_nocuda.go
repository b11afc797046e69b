//go:build !cuda

package model

// Without the cuda tag there is no device: NewOn(cfg, CUDA, …) fails with
// ErrNoCUDA, so a Model's dev and a KVCache's dev are always nil and these
// methods are never reached.

type deviceModel struct{}

type deviceKV struct{}

func newDeviceModel(*Config) (*deviceModel, error) { return nil, ErrNoCUDA }

func (*deviceModel) setTensor(string, []float32) error { return ErrNoCUDA }

func (*deviceModel) dropWeights() {}

func (*deviceModel) close() error { return nil }

func (*deviceModel) newKV(int, int) *deviceKV { return &deviceKV{} }

func (*deviceModel) allocKV(*deviceKV) error { return ErrNoCUDA }

func (*deviceModel) forward(*deviceKV, []Seq, int) ([][]float32, error) { return nil, ErrNoCUDA }

func (*deviceKV) close() error { return nil }
