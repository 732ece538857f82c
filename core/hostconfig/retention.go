package hostconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/archmax-ai/archmax/core/yamltree"
)

// Retention is the `retention:` section (RD22-8): how long a session is kept after its
// last activity before it is deleted with everything of it (its sub-workflow children,
// files, transcript, trail and events):
//
//	retention:
//	  sessions: 30d      # <n>d or <n>h, from 1h to 3650d
//
// On AWS the session's head carries the expiry (DynamoDB's TTL deletes it, the table's
// stream deletes the rest); locally the expiry is recorded only. The section replaces
// ARCHMAX_SESSION_TTL wholesale (host wins, as pricing's does: CO22-2).
type Retention struct {
	// Sessions is the TTL of a session from its last activity; 0 when the section names none.
	Sessions time.Duration
	// Line and Column locate the section in the file (for findings).
	Line, Column int
}

// Bounds of a retention period.
const (
	MinRetention = time.Hour
	MaxRetention = 3650 * 24 * time.Hour
)

// Keys of the section.
var retentionKeys = []string{"sessions"}

var retentionPeriod = regexp.MustCompile(`^([1-9][0-9]{0,6})([dh])$`)

// ParseRetention reads a retention period: "<n>d" (days) or "<n>h" (hours), from
// MinRetention to MaxRetention — the host file's retention.sessions and the
// ARCHMAX_SESSION_TTL variable. The error says what is accepted.
func ParseRetention(s string) (time.Duration, error) {
	m := retentionPeriod.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a retention period: write <n>d (days) or <n>h (hours), such as 30d", s)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	d := time.Duration(n) * time.Hour
	if m[2] == "d" {
		d *= 24
	}
	if d < MinRetention || d > MaxRetention {
		return 0, fmt.Errorf("%q is outside 1h to 3650d", s)
	}
	return d, nil
}

// retention reads `retention:`.
func (p *parser) retention(n *node, field string) *Retention {
	r := &Retention{Line: n.Line, Column: n.Col}
	if n.Kind != yamltree.Map {
		p.at(CodeType, field, n, "'%s' must be a mapping { sessions: <n>d }", field)
		return r
	}
	p.strict(n, field, retentionKeys, func(e *yamltree.Entry, f string) {
		if e.Val.Kind != yamltree.String {
			p.at(CodeType, f, e.Val, "'%s' must be a retention period such as 30d (<n>d days or <n>h hours, from 1h to 3650d)", f)
			return
		}
		d, err := ParseRetention(e.Val.Str)
		if err != nil {
			p.at(CodeType, f, e.Val, "'%s': %v", f, err)
			return
		}
		r.Sessions = d
	})
	return r
}
