package controller

import "sync"

// segmentLocks hands out one mutex per segment name, so the reconciles of
// groups sharing a router-ID space run one at a time while other segments'
// run alongside. Mutexes are never freed: there is one per segment the
// cluster has ever named, a handful.
type segmentLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

// lock locks seg's mutex and returns its unlock.
func (s *segmentLocks) lock(seg string) func() {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]*sync.Mutex{}
	}
	l, ok := s.m[seg]
	if !ok {
		l = &sync.Mutex{}
		s.m[seg] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}
