package machine

import (
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
)

// Mount is one entry of the host's mount table (spec 01 §6.6, 03 §6.6): Name is the mount
// key without leading/trailing "/" ("catalogs/eu"); File marks a file mount ("AGENTS.md"),
// which matches only its own path; Governed mounts are closed by default (GOV-45);
// ReadOnly is the host's ceiling no grant lifts (GOV-46).
type Mount struct {
	Name     string
	File     bool
	Governed bool
	ReadOnly bool
}

// DefaultMounts is the table a runtime serves when the host declares no mounts of its own:
// the authored, read-only, ungoverned skills/, .platform/ and AGENTS.md (spec 01 §6.5,
// 03 GOV-23). Treat as read-only.
var DefaultMounts = []Mount{
	{Name: "skills", ReadOnly: true},
	{Name: ".platform", ReadOnly: true},
	{Name: "AGENTS.md", File: true, ReadOnly: true},
}

// MountOf classifies a canonical workspace path (spec 01 §6.6 mountNameOf, 03 GOV-49): the
// longest directory mount equal to the path or prefixing it at a "/" boundary, or a file
// mount equal to the whole path. A sibling ("catalogs/uk" against "catalogs/eu",
// "skills/ledger-evil" against "skills/ledger") does not match.
func MountOf(mounts []Mount, path string) (Mount, bool) {
	var best Mount
	found := false
	for _, m := range mounts {
		match := path == m.Name || (!m.File && strings.HasPrefix(path, m.Name+"/"))
		if match && (!found || len(m.Name) > len(best.Name)) {
			best, found = m, true
		}
	}
	return best, found
}

// MountTable is the host's mount table the readers answer against: Mounts, or
// DefaultMounts when the host declared none.
func (m *Machine) MountTable() []Mount {
	if m.Mounts == nil {
		return DefaultMounts
	}
	return m.Mounts
}

func (m *Machine) mount(name string) (Mount, bool) {
	i := slices.IndexFunc(m.MountTable(), func(x Mount) bool { return x.Name == name })
	if i < 0 {
		return Mount{}, false
	}
	return m.MountTable()[i], true
}

// WorkflowForbiddenMounts is mounts.forbid_always: the names denied in every state, governed
// or not, in declaration order (spec 01 §3.3.12, 03 GOV-48).
func (m *Machine) WorkflowForbiddenMounts() []string { return m.Spec.Mounts.Forbid }

// ForbiddenMounts is every mount name denied while state is active: mounts.forbid_always
// first, then the state's own mounts.forbid, declaration order, each name once (GOV-48).
func (m *Machine) ForbiddenMounts(state string) []string {
	out := slices.Clone(m.WorkflowForbiddenMounts())
	if st := m.Spec.State(state); st != nil {
		for _, n := range st.Mounts.Forbid {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// MountDenial reports whether a forbid list denies the mount name in state, and whether
// the denying list is mounts.forbid_always (else the state's own mounts.forbid).
func (m *Machine) MountDenial(state, name string) (denied, workflowWide bool) {
	if slices.Contains(m.WorkflowForbiddenMounts(), name) {
		return true, true
	}
	return slices.Contains(m.ForbiddenMounts(state), name), false
}

// EnabledMounts is the governed mounts state reaches (GOV-45, GOV-48): the state's
// mounts.allow then the root's mounts.allow_always, declaration order, each name once,
// names the table does not govern dropped, minus ForbiddenMounts(state). Ungoverned mounts
// are never listed: they are visible everywhere unless forbidden.
func (m *Machine) EnabledMounts(state string) []string {
	denied := m.ForbiddenMounts(state)
	var out []string
	for _, g := range m.grants(state) {
		mt, ok := m.mount(g.Mount)
		if !ok || !mt.Governed || slices.Contains(out, g.Mount) || slices.Contains(denied, g.Mount) {
			continue
		}
		out = append(out, g.Mount)
	}
	return out
}

// grants is the state's mounts.allow followed by the root's mounts.allow_always.
func (m *Machine) grants(state string) []spec.MountGrant {
	var out []spec.MountGrant
	if st := m.Spec.State(state); st != nil {
		out = append(out, st.Mounts.Allow...)
	}
	return append(out, m.Spec.Mounts.Allow...)
}

// MountWritable reports whether state may write under the mount name (GOV-46, spec 01 §2.9):
// the host serves it writable, no applicable grant (the state's or allow_always) narrows it
// to access "read", and — for a governed mount — an applicable grant asks "read_write" (a
// bare grant reads). An ungoverned mount otherwise keeps the host's posture. Unknown names
// are not writable.
func (m *Machine) MountWritable(state, name string) bool {
	mt, ok := m.mount(name)
	if !ok || mt.ReadOnly {
		return false
	}
	readWrite := false
	for _, g := range m.grants(state) {
		if g.Mount != name {
			continue
		}
		switch g.Access {
		case "read":
			return false
		case "read_write":
			readWrite = true
		}
	}
	return readWrite || !mt.Governed
}

// MountReachable reports whether a path under the mount name is reachable in state at all:
// not denied by either level, and — when governed — enabled (GOV-45, GOV-47).
func (m *Machine) MountReachable(state, name string) bool {
	if slices.Contains(m.ForbiddenMounts(state), name) {
		return false
	}
	mt, ok := m.mount(name)
	return !ok || !mt.Governed || slices.Contains(m.EnabledMounts(state), name)
}

// EnabledSkills is the skills state reaches (spec 01 §2.8, 03 GOV-40): the state's
// skills.allow then the root's skills.allow_always, declaration order, each slug once,
// slugs the registry (Skills) lacks dropped, minus skills.forbid_always and the state's
// skills.forbid.
func (m *Machine) EnabledSkills(state string) []string {
	st := m.Spec.State(state)
	var lists [][]string
	var denied []string
	if st != nil {
		lists = append(lists, st.Skills.Allow)
		denied = st.Skills.Forbid
	}
	lists = append(lists, m.Spec.Skills.Allow)
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if slices.Contains(out, s) || !slices.Contains(m.Skills, s) ||
				slices.Contains(m.Spec.Skills.Forbid, s) || slices.Contains(denied, s) {
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// SkillOf returns the bundle slug a canonical path lies in ("skills/<slug>" or below), when
// the registry (Skills) serves that slug; classification goes through the registry, never
// a bare "skills/" prefix (GOV-22). The bundle's folder is matched ignoring case
// (spec.ReservedName), so "skills/LEDGER-EVIL/x" is governed as the bundle "ledger-evil" a
// case-insensitive authoring tree would serve there; the slug returned is the registry's.
func (m *Machine) SkillOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, skillsDir+"/")
	if !ok {
		return "", false
	}
	folder, _, _ := strings.Cut(rest, "/")
	if folder == "" {
		return "", false
	}
	if slices.Contains(m.Skills, folder) {
		return folder, true
	}
	for _, slug := range m.Skills {
		if spec.ReservedName(folder, slug) {
			return slug, true
		}
	}
	return "", false
}

const skillsDir = "skills"

// HiddenByGovernance reports whether a canonical workspace path must be left out of an ls,
// glob or grep result handed to state's model or scripts (GOV-41, GOV-48, BR-31): a path in
// a skill bundle the state does not enable, or under a mount the state cannot reach
// (forbidden at either level, or governed and not enabled). A parent directory that exists
// only because a nested mount lies below it ("catalogs" for "catalogs/eu") is not covered.
func (m *Machine) HiddenByGovernance(state, path string) bool {
	if slug, ok := m.SkillOf(path); ok && !slices.Contains(m.EnabledSkills(state), slug) {
		return true
	}
	if mt, ok := MountOf(m.MountTable(), path); ok {
		return !m.MountReachable(state, mt.Name)
	}
	return false
}
