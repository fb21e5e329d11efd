package mcp

// FastCalls is how many calls s answered on the fast path.
func FastCalls(s *Server) uint64 { return s.fast.calls.Load() }
