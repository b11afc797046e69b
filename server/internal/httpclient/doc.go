// Package httpclient is the HTTP transport the SGLang and vLLM clients
// share: one tuned connection pool, retries with backoff only where a resend
// cannot duplicate work, and typed *server.Error values.
package httpclient
