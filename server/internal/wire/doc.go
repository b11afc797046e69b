// Package wire holds the hand-written JSON pieces that the engine clients
// (server/sglang, server/vllm) and server/httpapi share on their hot paths,
// where encoding/json's reflection costs more than the request itself.
package wire
