package mcp

import "time"

// FastCalls is how many calls s answered on the fast path.
func FastCalls(s *Server) uint64 { return s.fast.calls.Load() }

// SweepSessions closes the HTTP sessions of s idle at now.
func SweepSessions(s *Server, now time.Time) int { return s.sweepSessions(now) }
