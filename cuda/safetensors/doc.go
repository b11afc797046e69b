// Package safetensors reads and writes the safetensors tensor file format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length, a JSON header mapping tensor names to dtype, shape and byte range,
// then the raw little-endian tensor bytes.
//
// Open memory-maps a file and validates the whole header before returning:
// every byte range must lie inside the data section, match dtype × shape
// exactly, and not overlap another tensor. A corrupt or truncated file is an
// error naming the tensor and the problem, never a panic.
//
//	f, err := safetensors.Open("model.safetensors")
//	if err != nil { ... }
//	defer f.Close()
//	w, err := f.Float32("model.norm.weight") // F32, F16 or BF16 → []float32
package safetensors
