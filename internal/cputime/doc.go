// Package cputime measures CPU time, for benchmarks and linear-time tests
// on shared machines: there the wall clock also counts the time spent
// waiting for a core while other jobs run, and CPU time per operation
// measures the work itself. Process is the whole process's; Thread and
// PerCall are the calling thread's, for single-threaded work such as
// encoding or parsing one text. It is internal: only this module's
// benchmarks and tests use it.
package cputime
