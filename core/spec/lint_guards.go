package spec

import (
	"fmt"
	"strings"
)

// lintGuardGlobs warns on a guard glob for a path argument that can never match (K17-4):
// path arguments are matched in their canonical form, which has no leading '/', no empty
// segment ('//') and no '.' or '..' segment. The leading '/' is already a load error (P-12,
// tools.guard-absolute); this covers the rest, for `paths:` and for `args:` naming a
// built-in tool's declared path argument (every built-in's, for a "*" entry).
func lintGuardGlobs(sp *MachineSpec, at atFunc) {
	check := func(list []ToolEntry, field, kind string, st *State) {
		for i, e := range list {
			f := fmt.Sprintf("%s.%s.%d", field, kind, i)
			for _, g := range e.Paths {
				if why := neverCanonical(g); why != "" {
					at(sevWarning, "tools.guard-never-matches", f+".paths", st, guardNeverMatches(g, why))
				}
			}
			for _, a := range e.Args {
				if !isBuiltInPathArg(e.Tool, a.Name) {
					continue
				}
				for _, g := range a.Globs {
					if why := neverCanonical(g); why != "" {
						at(sevWarning, "tools.guard-never-matches", f+".args."+a.Name, st, guardNeverMatches(g, why))
					}
				}
			}
		}
	}
	check(sp.Tools.Allow, "tools", "allow_always", nil)
	check(sp.Tools.Forbid, "tools", "forbid_always", nil)
	for _, st := range sp.States {
		check(st.Tools.Allow, "states."+st.Slug+".tools", "allow", st)
		check(st.Tools.Forbid, "states."+st.Slug+".tools", "forbid", st)
	}
}

func guardNeverMatches(g, why string) string {
	return fmt.Sprintf("the guard glob '%s' can never match: it %s, and a path argument is matched in its canonical form ('scratchpad/a.md', never '/scratchpad//./a.md')", g, why)
}

// neverCanonical says why a glob can match no canonical path, or "".
func neverCanonical(g string) string {
	if strings.Contains(g, "//") {
		return "holds '//'"
	}
	for seg := range strings.SplitSeq(g, "/") {
		if seg == "." || seg == ".." {
			return "holds a '" + seg + "' segment"
		}
	}
	return ""
}

// isBuiltInPathArg reports whether name is a declared path argument of the built-in tool
// (of any built-in, for "*").
func isBuiltInPathArg(tool, name string) bool {
	for t, args := range BuiltInToolPaths {
		if tool != ForbidAnyTool && t != tool {
			continue
		}
		for _, pa := range args {
			if pa.Arg == name {
				return true
			}
		}
	}
	return false
}
