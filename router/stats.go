package router

// ServerStats is one server's counters at the time of a Snapshot.
type ServerStats struct {
	Name     string
	State    State
	InFlight int // calls on the server now
	// ConsecutiveFailures counts failed calls since the last success.
	ConsecutiveFailures int
	Assigned            uint64 // call attempts sent to the server
	Failures            uint64 // attempts that failed (retried ones included)
	StickyHits          uint64 // turns that went to their session's sticky server
	GroupHits           uint64 // first turns that joined their group's server
	Moves               uint64 // sticky turns moved away from here by the imbalance gate
	Repicks             uint64 // sticky turns placed elsewhere because this server was ejected or removed
	Retries             uint64 // attempts that failed here before producing tokens and were retried
	Ejections           uint64 // times the server was ejected
}

// Snapshot is a consistent view of the router's counters.
type Snapshot struct {
	// Servers are the registered and draining servers in registration order.
	Servers []ServerStats
	// Totals over all servers ever registered, removed ones included.
	Moves, Repicks, Retries uint64
}

// Snapshot returns the router's counters, all read at one instant.
func (r *Router) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Snapshot{
		Servers: make([]ServerStats, len(r.order)),
		Moves:   r.totals.moves,
		Repicks: r.totals.repicks,
		Retries: r.totals.retries,
	}
	for i, b := range r.order {
		s.Servers[i] = ServerStats{
			Name:                b.name,
			State:               b.state,
			InFlight:            b.inflight,
			ConsecutiveFailures: b.consecutive,
			Assigned:            b.stats.assigned,
			Failures:            b.stats.failures,
			StickyHits:          b.stats.stickyHits,
			GroupHits:           b.stats.groupHits,
			Moves:               b.stats.moves,
			Repicks:             b.stats.repicks,
			Retries:             b.stats.retries,
			Ejections:           b.stats.ejections,
		}
	}
	return s
}
