// Package golden reads the PyTorch reference files that the cuda packages'
// tests compare against (made by cuda/testdata/reference.py and
// cuda/train/testdata/reference.py): a safetensors file whose metadata
// lists the model variants ("variants", comma-separated) and, for each, its
// config.json text ("<name>.config") and weight seed ("<name>.seed"), with
// the expected tensors named "<name>.<what>".
//
// It is a test helper: every failure fails the test it was given.
//
//	f := golden.Open(t, "testdata/reference.safetensors")
//	for _, v := range f.Variants() {
//		cfg, err := model.ParseConfig(v.Config)
//		require.NoError(t, err)
//		tokens := f.Int32(v.Name + ".tokens")
//		...
//	}
package golden
