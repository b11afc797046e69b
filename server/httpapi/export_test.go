package httpapi

// BodyMemory returns the bytes the bodies being read hold now and the most
// they ever held (Config.MaxBodyMemory's counter).
func BodyMemory(s *Server) (held, peak int64) {
	s.bodies.mu.Lock()
	defer s.bodies.mu.Unlock()
	return s.bodies.held, s.bodies.peak
}
