package kernel

import (
	"errors"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
)

// Workspace areas (spec 01 §6.5, 03 §6.8).
const (
	ScratchpadDir   = "scratchpad"
	AuthoringPrefix = "workflows"
	SkillsMount     = "skills"
	PlatformMount   = ".platform"
	AgentsFile      = "AGENTS.md"
	// HostFile is the host configuration at the workspace root (core/hostconfig.File): on
	// the authoring plane, unreachable by every caller.
	HostFile = spec.HostFile
)

var (
	// InternalDirs are unreachable by any tool (GOV-24).
	InternalDirs = []string{"checkpoints", "artifacts", "_specs"}
	// OffloadDirs are readable, never writable by the agent (GOV-23a, GOV-55).
	OffloadDirs = []string{"large_tool_results", "conversation_history"}
)

// Zone tests on a canonical path's first segment. The refusing zones are matched ignoring
// case (spec.ReservedName: Unicode simple case folding), so "Checkpoints/x" or "_SPECS/x"
// is refused like the area it would alias on a case-insensitive store; the zones that
// grant something (the scratchpad, offload reads) stay exact, so a folded name never
// widens what a call may do.

// IsInternalArea reports whether first names a runtime-internal area (GOV-24), in any case.
func IsInternalArea(first string) bool { return spec.ReservedName(first, InternalDirs...) }

// IsOffloadArea reports whether first names an offload area (GOV-23a), in any case.
func IsOffloadArea(first string) bool { return spec.ReservedName(first, OffloadDirs...) }

// IsAuthoringPlane reports whether first names the authoring plane (GOV-21), in any case.
func IsAuthoringPlane(first string) bool { return spec.ReservedName(first, AuthoringPrefix) }

// IsHostFile reports whether first names the host file, in any case.
func IsHostFile(first string) bool { return spec.ReservedName(first, HostFile) }

// ErrPathEscape is returned by CanonicalPath for a path climbing above the workspace root.
var ErrPathEscape = errors.New("path escapes the workspace root")

// CanonicalPath canonicalises an agent-visible path (GOV-30, GOV-56): leading slashes
// stripped, "." and empty segments dropped, ".." applied; "" is the root. A path climbing
// above the root returns ErrPathEscape.
func CanonicalPath(p string) (string, error) {
	var out []string
	for _, seg := range strings.Split(strings.ReplaceAll(p, "\\", "/"), "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) == 0 {
				return "", ErrPathEscape
			}
			out = out[:len(out)-1]
		default:
			out = append(out, seg)
		}
	}
	return strings.Join(out, "/"), nil
}

func firstSegment(p string) string {
	s, _, _ := strings.Cut(p, "/")
	return s
}

// PathArgs returns a tool's declared path arguments (spec 01 §7.3 BUILT_IN_TOOL_PATHS).
func PathArgs(tool string) []spec.PathArg { return spec.BuiltInToolPaths[tool] }

// PathUses derives the governed path uses of a call from its arguments: each declared
// path argument that holds a string (or list of strings), canonicalised. A path escaping
// the root is returned with ok=false (the caller refuses it before any rule runs).
func PathUses(tool string, args map[string]any) (uses []PathUse, escaped string) {
	return pathUses(PathArgs(tool), args)
}

func pathUses(decls []spec.PathArg, args map[string]any) (uses []PathUse, escaped string) {
	for _, pa := range decls {
		v, ok := args[pa.Arg]
		if !ok && pa.Arg == "file_path" {
			v, ok = args["path"] // read_file/write_file/edit_file accept `path` (BR-41)
		}
		if !ok || v == nil {
			if pa.Access == "list" || pa.Access == "search" {
				uses = append(uses, PathUse{Arg: pa.Arg, Path: "", Access: pa.Access, Raw: "/"})
			}
			continue
		}
		var raws []string
		switch x := v.(type) {
		case string:
			raws = []string{x}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					raws = append(raws, s)
				}
			}
		}
		for _, raw := range raws {
			c, err := CanonicalPath(raw)
			if err != nil {
				return nil, raw
			}
			uses = append(uses, PathUse{Arg: pa.Arg, Path: c, Access: pa.Access, Raw: raw})
		}
	}
	return uses, ""
}
