package mcpserver

// SetAfterSourceHash sets the hook called between the read of the source a
// confirmation is tied to and the approval gate's judgment (nil: none).
func SetAfterSourceHash(f func(path string)) { afterSourceHash = f }

// SetTaskPageSize sets how many tasks a tasks/list page holds; the
// returned func restores it.
func SetTaskPageSize(n int) func() {
	old := taskPageSize
	taskPageSize = n
	return func() { taskPageSize = old }
}

// TaskFileReads is how many task files s has read.
func TaskFileReads(s *Server) int64 { return s.tasks.reads.Load() }

// ActiveRequests is how many requests of HTTP session id s has under way.
func ActiveRequests(s *Server, id string) int {
	s.uses.mu.Lock()
	defer s.uses.mu.Unlock()
	if su, ok := s.uses.byID[id]; ok {
		return su.active
	}
	return 0
}
