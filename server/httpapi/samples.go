package httpapi

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/agentrl/agentrl/server"
)

// maxSamples bounds n: each sample is a whole generation.
const maxSamples = 64

// takeN reads OpenAI's n and clears it from k (the knobs' own check
// refuses n > 1 where samples cannot be returned).
func (k *samplingKnobs) takeN() (int, error) {
	if k.N == nil {
		return 1, nil
	}
	n := *k.N
	k.N = nil
	switch {
	case n < 1 || n > maxSamples:
		return 0, badRequest(`field "n": must be in [1, %d], got %d`, maxSamples, n)
	}
	return n, nil
}

// runSamples runs p's n samples of one prompt at once: n engine requests
// named "{id}-{i}" as vLLM names a parallel-sampling request's children,
// with seed+i when a seed is set so that the samples differ yet repeat. On
// failure it has written the error.
func (s *Server) runSamples(w http.ResponseWriter, r *http.Request, p *prepared) ([]server.TokenOutput, bool) {
	reqs := sampleRequests(p)
	outs := make([]server.TokenOutput, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = s.engine.Generate(r.Context(), req)
			if errs[i] == nil {
				errs[i] = checkOutput(outs[i], req)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			writeEngineError(w, err)
			return nil, false
		}
	}
	return outs, true
}

// sampleRequests are the engine requests of p's n samples (see runSamples).
func sampleRequests(p *prepared) []server.GenerateRequest {
	n := max(p.n, 1)
	reqs := make([]server.GenerateRequest, n)
	for i := range n {
		req := p.req
		if n > 1 {
			req.RequestID = p.req.RequestID + "-" + strconv.Itoa(i)
			if req.Params.Seed != nil {
				seed := *req.Params.Seed + uint64(i)
				req.Params.Seed = &seed
			}
		}
		reqs[i] = req
	}
	return reqs
}
