// Package cuda is agentrl's in-process token-in/token-out engine, with two
// backends: the CPU (the default; C kernels through cgo) and an NVIDIA GPU
// (a binary built with the `cuda` tag, Options.Device = model.CUDA). The
// name is the design's, not a requirement: nothing here needs CUDA unless
// asked for. A whole rollout pipeline can run in one Go process, with no
// Python and no server, for unit-testable pipelines, small models and
// single-machine work.
//
// An Engine implements server.LLMServer and the optional capabilities
// (server.Aborter, server.Sleeper, server.WeightUpdater,
// server.HealthChecker, server.CacheFlusher, server.Pauser, server.Streamer:
// the scheduler pushes each sampled token to a streamed request without
// waiting for its reader). One scheduler
// goroutine owns the model, the paged KV cache and every request; each
// step plans a batch, runs the forward pass, samples and retires
// (nano-vllm's stages). It runs continuous batching — decode tokens of
// running sequences plus prefill chunks of new ones within a token budget
// in each forward pass — with a prefix cache of hashed full blocks
// (reference counted, LRU eviction), preemption by recompute when blocks
// run out, and request priority.
//
// Sampling (temperature, top-k, top-p, min-p, repetition penalty, vLLM's
// presence and frequency penalties, stop ids, max new tokens) uses a random stream per request, and every token's
// logits are computed independently of the rest of the batch, so a seeded
// request yields the same tokens and logprobs whatever else runs. The
// reported logprob is the log-softmax of the processed distribution, and
// so are the top logprobs (SamplingParams.TopLogprobs: the most probable
// tokens the draw could have picked); see sampler for the exact pipeline.
// Sampling runs on the host with either backend, so the GPU backend has
// every setting too.
//
// The subpackages follow ollama's and nano-vllm's split: model (the
// decoder, defined once in model.Decode over the backends' operations, and
// weight loading), kernels (the CPU backend's C kernels, run-time ISA
// dispatch), gpu (the GPU backend's kernels and cuBLAS), kvcache (block
// manager and prefix cache) and train (the training forward and backward,
// the same decoder over training kernels); checkpoints are read by the
// top-level safetensors package. Without the `cuda` tag asking for the
// GPU is model.ErrNoCUDA. See README.md for the CUDA
// build, which is compile-checked but has not been run on a GPU.
//
// Options left zero take their defaults; a negative size is an error from
// Open (before anything is loaded) and New, naming the option.
//
//	e, err := cuda.Open("path/to/model", cuda.Options{})
//	if err != nil { ... }
//	defer e.Close()
//	out, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: ids,
//		Params: server.SamplingParams{Temperature: 1, MaxNewTokens: 128}})
//
// The models it runs are dense: there is no MoE router, so a request's
// SamplingParams.RoutedExperts (routing replay) gets no routing back
// (TokenOutput.RoutedExperts stays nil); routing comes from SGLang and vLLM.
package cuda
