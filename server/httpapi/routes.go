package httpapi

func (s *Server) routes() {
	m := s.mux
	// SGLang native API.
	m.HandleFunc("POST /generate", s.handleSGLangGenerate)
	m.HandleFunc("POST /abort_request", s.handleAbortRequest)
	m.HandleFunc("GET /health", s.handleHealth)
	m.HandleFunc("GET /health_generate", s.handleHealth)
	m.HandleFunc("GET /flush_cache", s.handleFlushCache)
	m.HandleFunc("POST /flush_cache", s.handleFlushCache)
	m.HandleFunc("POST /update_weights_from_disk", s.handleUpdateWeightsFromDisk)
	m.HandleFunc("POST /release_memory_occupation", s.handleReleaseMemory)
	m.HandleFunc("POST /resume_memory_occupation", s.handleResumeMemory)
	m.HandleFunc("POST /pause_generation", s.handlePauseGeneration)
	m.HandleFunc("POST /continue_generation", s.handleResume)
	m.HandleFunc("GET /model_info", s.handleModelInfo)
	m.HandleFunc("GET /get_model_info", s.handleModelInfo)

	// vLLM token-in/token-out and control API.
	m.HandleFunc("POST /inference/v1/generate", s.handleVLLMGenerate)
	m.HandleFunc("POST /abort_requests", s.handleAbortRequests)
	m.HandleFunc("POST /pause", s.handleVLLMPause)
	m.HandleFunc("POST /resume", s.handleResume)
	m.HandleFunc("POST /sleep", s.handleSleep)
	m.HandleFunc("POST /wake_up", s.handleWakeUp)
	m.HandleFunc("GET /is_sleeping", s.handleIsSleeping)
	m.HandleFunc("POST /reset_prefix_cache", s.handleFlushCache)

	// OpenAI-compatible API.
	m.HandleFunc("GET /v1/models", s.handleModels)
	m.HandleFunc("POST /v1/completions", s.handleCompletions)
	m.HandleFunc("POST /v1/chat/completions", s.handleChatCompletions)
}
