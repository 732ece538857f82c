package session

import "github.com/archmax-ai/archmax/core/spec"

// expiresAt is the retention expiry a commit of session id gives its head (RD22-8): the
// engine's clock plus Config.SessionTTL, in Unix seconds (rounded up, so a session is kept
// at least the TTL); 0 without a TTL, and for a sub-workflow child — only the root's head
// carries the expiry, and the deletion it triggers takes the children with it.
func (e *Engine) expiresAt(id string) int64 {
	if e.cfg.SessionTTL <= 0 {
		return 0
	}
	if _, child := spec.ParentSessionIDOf(id); child {
		return 0
	}
	t := e.cfg.Clock().Add(e.cfg.SessionTTL)
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}
