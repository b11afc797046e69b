// Package syncbuf is a bytes.Buffer that goroutines may write while another
// reads it: the log or output destination of a server, router or command
// that a test starts and reads before it stops. It is internal: only this
// module's tests use it.
package syncbuf
