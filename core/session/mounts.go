package session

import (
	"fmt"
	"strings"

	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/workspace"
)

// MountCollisionError: a host mount's key names a session area or the authoring plane, or
// repeats another mount (spec 01 §6.5, 03 GOV-59).
type MountCollisionError struct{ Mount, Reason string }

func (e *MountCollisionError) Error() string {
	return fmt.Sprintf("Mount '/%s/' cannot be served: %s.", e.Mount, e.Reason)
}

// Name returns the spec error name.
func (e *MountCollisionError) Name() string { return "MountCollisionError" }

// AuthoringBackendExposedError: a writable mount is served by the authoring backend
// (spec 01 §1.8, 03 GOV-59); a read-only one may share it.
type AuthoringBackendExposedError struct{ Mount string }

func (e *AuthoringBackendExposedError) Error() string {
	return fmt.Sprintf("Mount '/%s/' is writable but served by the authoring backend, which would expose workflows/ to writes; serve it read-only or from another store.", e.Mount)
}

// Name returns the spec error name.
func (e *AuthoringBackendExposedError) Name() string { return "AuthoringBackendExposedError" }

// checkMounts validates the host's mounts at assembly (GOV-59): a well-formed name
// (01 §6.6), no first segment that is a session area or the authoring prefix, no repeat of
// a default or another mount, and no writable mount over the authoring backend.
func checkMounts(cfg Config) error {
	seen := map[string]bool{}
	for _, m := range workspace.DefaultMounts(cfg.Authored) {
		seen[m.Name] = true
	}
	for _, m := range cfg.Mounts {
		if !mountName(m.Name) {
			return &MountCollisionError{Mount: m.Name, Reason: "it is not a mount name (no leading or trailing '/', no empty, '.' or '..' segment, no glob characters)"}
		}
		first, _, _ := strings.Cut(m.Name, "/")
		if spec.ReservedName(first, spec.AuthoringPrefix, spec.HostFile) || spec.ReservedName(first, spec.SessionAreaNames...) {
			return &MountCollisionError{Mount: m.Name, Reason: fmt.Sprintf("'%s' is reserved at the workspace root (a session area or the authoring plane)", first)}
		}
		if seen[m.Name] {
			return &MountCollisionError{Mount: m.Name, Reason: "another mount has the same key"}
		}
		seen[m.Name] = true
		if m.Files == nil {
			return fmt.Errorf("mount %q has no store", m.Name)
		}
		if !m.ReadOnly && m.Files == cfg.Authored {
			return &AuthoringBackendExposedError{Mount: m.Name}
		}
	}
	return nil
}

// mountName is the mount-name grammar of spec 01 §6.6.
func mountName(s string) bool {
	if s == "" || s != strings.TrimSpace(s) || strings.ContainsAny(s, "*?[]{}") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		return false
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// workspaceMounts are the mounts a session's workspace serves: the defaults, then the host's.
func (e *Engine) workspaceMounts() []workspace.Mount {
	return append(workspace.DefaultMounts(e.cfg.Authored), e.cfg.Mounts...)
}

// mountTable is the same table as the kernel and the machine read it.
func (e *Engine) mountTable() []machine.Mount {
	ms := e.workspaceMounts()
	out := make([]machine.Mount, 0, len(ms))
	for _, m := range ms {
		out = append(out, machine.Mount{Name: m.Name, File: m.File, Governed: m.Governed, ReadOnly: m.ReadOnly})
	}
	return out
}
