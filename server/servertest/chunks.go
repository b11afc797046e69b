package servertest

import "github.com/agentrl/agentrl/server"

// Chunks gathers what a server.Streamer emits, so that a test can compare
// the chunks with the output GenerateStream returns: pass its Emit as emit.
// It keeps copies: a Streamer may reuse a chunk's slices once emit returns.
type Chunks struct {
	// TokenIDs and Logprobs are every chunk's, concatenated in order.
	TokenIDs []int32
	Logprobs []float32
	// TopLogprobs are every chunk's alternatives, concatenated in order
	// (the inner lists copied too).
	TopLogprobs [][]server.TopLogprob
	// Calls counts the chunks.
	Calls int
}

// Emit records one chunk; it never fails.
func (c *Chunks) Emit(ch server.Chunk) error {
	c.Calls++
	c.TokenIDs = append(c.TokenIDs, ch.TokenIDs...)
	c.Logprobs = append(c.Logprobs, ch.Logprobs...)
	for _, top := range ch.TopLogprobs {
		c.TopLogprobs = append(c.TopLogprobs, append([]server.TopLogprob{}, top...))
	}
	return nil
}
