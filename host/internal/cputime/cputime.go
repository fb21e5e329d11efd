// Package cputime reads the CPU time this process has used, for the
// benchmarks that report it beside the wall time: on a shared machine
// other processes stretch the wall time of a run, not its CPU time.
//
// Where getrusage(2) does not exist (Windows) every reading is 0, so the
// metrics built on it read 0 instead of failing the build.
package cputime

import "time"

// Process is the user and system CPU time of this process so far.
func Process() time.Duration { return read(self) }

// WithChildren is Process plus the CPU time of the child processes that
// have ended and been waited for: the whole cost of work done in
// subprocesses.
func WithChildren() time.Duration { return read(self) + read(children) }

// Thread is the CPU time of the calling OS thread (lock the goroutine to
// its thread first); 0 where the system cannot tell a thread's time.
func Thread() time.Duration { return read(thread) }

type who int

const (
	self who = iota
	children
	thread
)
