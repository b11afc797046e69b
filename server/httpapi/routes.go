package httpapi

// routes registers the endpoints. Control endpoints (everything that
// changes the engine's state rather than generating) go through s.control:
// JSON content type required, small body limit.
func (s *Server) routes() {
	m := s.mux
	// SGLang native API.
	m.HandleFunc("POST /generate", s.handleSGLangGenerate)
	m.HandleFunc("POST /abort_request", s.control(s.handleAbortRequest))
	m.HandleFunc("GET /health", s.handleHealth)
	m.HandleFunc("GET /health_generate", s.handleHealth)
	m.HandleFunc("POST /flush_cache", s.control(s.handleFlushCache))
	m.HandleFunc("POST /update_weights_from_disk", s.control(s.handleUpdateWeightsFromDisk))
	m.HandleFunc("POST /release_memory_occupation", s.control(s.handleReleaseMemory))
	m.HandleFunc("POST /resume_memory_occupation", s.control(s.handleResumeMemory))
	m.HandleFunc("POST /pause_generation", s.control(s.handlePauseGeneration))
	m.HandleFunc("POST /continue_generation", s.control(s.handleContinueGeneration))
	m.HandleFunc("GET /model_info", s.handleModelInfo)
	m.HandleFunc("GET /get_model_info", s.handleModelInfo)
	m.HandleFunc("GET /get_weight_version", s.handleGetWeightVersion)
	m.HandleFunc("GET /get_server_info", s.handleServerInfo)
	m.HandleFunc("GET /version", s.handleVersion)
	m.HandleFunc("POST /tokenize", s.handleTokenize)
	m.HandleFunc("POST /detokenize", s.handleDetokenize)
	m.HandleFunc("GET /metrics", s.handleMetrics)

	// vLLM token-in/token-out and control API.
	m.HandleFunc("POST /inference/v1/generate", s.handleVLLMGenerate)
	m.HandleFunc("POST /abort_requests", s.control(s.handleAbortRequests))
	m.HandleFunc("POST /pause", s.control(s.handleVLLMPause))
	m.HandleFunc("POST /resume", s.control(s.handleVLLMResume))
	m.HandleFunc("POST /sleep", s.control(s.handleSleep))
	m.HandleFunc("POST /wake_up", s.control(s.handleWakeUp))
	m.HandleFunc("GET /is_sleeping", s.handleIsSleeping)
	m.HandleFunc("POST /reset_prefix_cache", s.control(s.handleFlushCache))

	// OpenAI-compatible API.
	m.HandleFunc("GET /v1/models", s.handleModels)
	m.HandleFunc("GET /v1/models/{id...}", s.handleModel)
	m.HandleFunc("POST /v1/completions", s.handleCompletions)
	m.HandleFunc("POST /v1/chat/completions", s.handleChatCompletions)
	m.HandleFunc("POST /v1/responses", s.handleResponses)

	// Anthropic Messages API.
	m.HandleFunc("POST /v1/messages", s.handleMessages)
	m.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
}
