// Package safetensors reads and writes the safetensors tensor file format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length, a JSON header mapping tensor names to dtype, shape and byte range,
// then the raw little-endian tensor bytes.
//
// Open validates the whole header before returning: every byte range must
// lie inside the data section, match dtype × shape exactly, and not overlap
// another tensor, and no JSON key may appear twice. A corrupt or truncated
// file is an error naming the tensor and the problem, never a panic.
//
// Tensor bytes are read (pread) into caller-owned memory by default, so a
// file truncated while a model is loaded or running is a read error
// instead of a SIGBUS that kills the process. Set.Map maps the files
// read-only instead, for callers that use the bytes in place and accept
// that trade-off (see Mapping: Changed reports a file written, truncated
// or otherwise changed under the mapping). WriteFile writes a new file
// and renames it over the old one, so a mapping of the old file is never
// changed by it. ReadAt reads any byte
// range of a tensor, concurrently, so loaders fill their final buffers
// directly, in parallel, with no intermediate copy. Read takes a whole
// file from a stream instead (trajectory batches), with the same header
// checks and the reference's rule that tensors tile the data with no gap.
//
// The package imports nothing else of this module, so the engine
// (cuda/model), its exporters and trajectory files can share it.
//
//	f, err := safetensors.Open("model.safetensors")
//	if err != nil { ... }
//	defer f.Close()
//	w, err := f.Float32("model.norm.weight") // F32, F16 or BF16 → []float32
package safetensors
