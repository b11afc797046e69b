// Package model defines the Llama-family decoders the in-process engine
// runs — Llama 3.x, Qwen2/2.5 (q/k/v bias) and Qwen3 (per-head QK RMSNorm),
// with grouped-query attention, tied or untied embeddings and Hugging Face
// half-split RoPE (including Llama-3.1 frequency scaling) — loaded from a
// Hugging Face directory (config.json + model.safetensors or a sharded
// index) and evaluated on a paged KV cache by package kernels.
//
//	m, err := model.Load(dir, nil)           // nil: all cores, best ISA
//	kv := m.NewKVCache(numBlocks, 16)
//	logits, err := m.Forward(kv, []model.Seq{{Tokens: prompt, Blocks: table}})
//
// The architecture is written once, in decoder.go: Config.Place says where
// each checkpoint tensor goes in the fused weight layout (q|k|v, gate|up),
// NewWeights allocates the slots a config has, and Decode is the layer
// sequence over the Ops a backend implements on its own activation and
// weight types — the CPU kernels (fp32, bf16, bf16z or int8 weights), the GPU device,
// and package train's kernels, which save what the backward pass reads.
// A new architecture quirk changes Decode, and every backend runs it.
//
// Numerics are checked against a plain PyTorch implementation
// (../testdata/reference.py) to ≤ 1e-4 relative error (≈1e-6 measured).
//
// A KV cache is fp32 (NewKVCache) or, on the CPU, bf16 (NewKVCacheBF16:
// keys and values rounded to nearest even as they are written, half the
// bytes a position), checked against PyTorch with the same rounding
// (../testdata/reference_kvbf16.py, TestReferenceNumericsKVBF16).
//
// Weights are fp32 (packed for the GEMM kernel) or bf16 (WeightsBF16: the
// checkpoint's row-major bf16, multiplied with vdpbf16ps, half the bytes
// per decoded token). An fp32 model keeps a matrix whose checkpoint
// tensors are all BF16 in half the bytes too (kernels.Packed.Half: the
// panels of its values' upper halves, widened exactly in registers), so a
// bf16 checkpoint computed in float32 costs a bf16 model's memory and
// bandwidth and gives float32 panels' bits (TestFP32HalfMatchesFloat32);
// an update with values that are not bf16 values moves its matrix to
// float32 panels. A bf16 checkpoint loads as bf16 by default
// (LoadWith, LoadOptions.Weights). On Linux a bf16 model computes from a
// read-only mapping of its checkpoint, as llama.cpp does: each matrix is
// its tensors' mapped rows (kernels.NewBF16Parts), so loading allocates
// and copies nothing for them. The files are registered with the kernels'
// SIGBUS guard, and every Forward checks that none changed since it was
// mapped (safetensors.Mapping.Changed), so a file truncated or rewritten
// in place under the mapping makes Forward an error naming it rather than
// killing the process or computing from other bytes. A packed checkpoint
// (Model.WritePacked, `agentrl model pack`) holds int8, fp32 or bf16z weights in
// the kernels' own layout, so they too load with nothing converted, mapped
// the same way. LoadOptions.Copy, and every other load, reads each tensor
// straight into the model's memory in parallel, without an intermediate
// copy; a tensor that must be converted (to packed fp32, to int8, or
// widened) is read a bounded piece at a time into a per-thread buffer that
// stays in cache, and converted from there straight into the model's
// layout (kernels.PackRowsFrom, kernels.Q8.QuantizeRowsFrom).
// bf16 models are checked against PyTorch in float64 on
// the same bf16 weights (../testdata/reference_bf16.py) to ≤ 2e-2 relative
// error (≈1e-2 measured, no greedy token differing).
//
// WeightsBF16Z stores bf16 values compressed losslessly (kernels.BF16Z,
// about 12 bits a weight): a bf16z model gives a bf16 model's logits bit
// for bit (TestBF16ZMatchesBF16) while a decode step reads three quarters
// of the bytes. Loading a Hugging Face checkpoint as bf16z loads it as
// bf16 (mapped), compresses every matrix on all threads and unmaps it; a
// packed bf16z checkpoint (`agentrl model pack --weights bf16z`) loads with
// nothing converted, mapped like the others, its escape offsets checked
// first (kernels.BF16Z.Check).
//
// WeightsInt8 quantizes matrices and the embedding table at load, from any
// checkpoint type, to llama.cpp's Q8_0 values (kernels.Q8: an int8 per
// weight, an fp16 scale per 32, 34/32 bytes), in parallel through the same
// bounded per-job buffers (no full-precision copy); a tied head is the
// embedding. Against PyTorch in float64 on the unquantized weights the
// logits stay within 1e-1 relative error (≈4–6e-2 measured), with argmax
// flips only at near ties (TestReferenceNumericsInt8).
//
// In a binary built with the `cuda` tag a model can live on the GPU
// (device.go): LoadOn(dir, CUDA, nil) or NewOn uploads the weights to
// device memory, NewKVCache/AllocKVCache put the cache there, and Forward
// runs package gpu's kernels with the same semantics. Such a model and
// its caches hold device memory until closed (Model.Close, KVCache.Close).
// Without the tag, CUDA is ErrNoCUDA.
package model
