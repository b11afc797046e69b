// Package train is the reference trainer's model: the forward pass of a
// Llama-family decoder (Llama, Qwen2 with q/k/v bias, Qwen3 with QK-norm,
// tied or untied embeddings, GQA, Hugging Face half-split RoPE with
// optional Llama-3 scaling) over whole token rows, saving its activations,
// and the matching backward pass.
//
// The kernels are C, called through cgo, one file per layer kind with its
// forward and backward side by side in the style of karpathy/llm.c
// (embedding.c, rmsnorm.c, matmul.c, rope.c, attention.c, swiglu.c,
// residual.c, logprob.c). The hot loops are vectorized for AVX2+FMA and
// AVX-512F with per-function target attributes, chosen at run time, and
// large operations are split over goroutines.
//
// Weights live under their Hugging Face names, so a model loads from any
// directory the engine loads (Load), and a trained one is saved with
// cuda/model.WriteDir(dir, m.Config(), m.Tensors()) or sent to a running
// engine with m.Weights(version).
//
// Forward keeps every activation it needs until the next Forward,
// including the [tokens][vocab] logits and each row's [heads][len][len]
// attention probabilities: this is a reference trainer for small models
// and short rows, not a memory-optimized one (no activation recomputation,
// no chunked vocabulary).
//
// Every loss the trainer needs is a function of per-token log-probabilities,
// so the interface is: Forward returns them, Backward takes dL/dlogp:
//
//	m, _ := train.Load("path/to/model", train.Options{})
//	lp, _ := m.Forward([][]int32{ids})           // lp[0][j] = log p(ids[j+1] | ids[:j+1])
//	_ = m.Backward([][]float32{dlossDlogp})      // accumulates into Params()[i].Grad
package train
