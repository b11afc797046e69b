package httpapi

import "net/http"

// handleMetrics serves Config.Metrics: the caller's Prometheus registry
// (the in-process engine's collectors live in package cuda/cudaprom, which
// this package does not import).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		writeError(w, http.StatusNotFound, "this server exports no metrics (httpapi.Config.Metrics is unset)")
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}
