package spec

import (
	"bytes"
	"fmt"
)

// Frontmatter returns the YAML frontmatter block a Markdown file opens with — between a
// first line "---" (after an optional byte-order mark) and a later "---" line, CRLF read as
// LF — and whether there is one (spec 01 §1.2; a skill's SKILL.md, a WORKFLOW.md).
func Frontmatter(md []byte) ([]byte, bool) {
	md = bytes.TrimPrefix(md, []byte("\xef\xbb\xbf"))
	md = bytes.ReplaceAll(md, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(md, []byte("---\n"))
	if !ok {
		return nil, false
	}
	var front []byte
	for line := range bytes.Lines(rest) {
		if string(bytes.TrimRight(line, "\n")) == "---" {
			return front, true
		}
		front = append(front, line...)
	}
	return nil, false
}

// HasFrontmatter reports whether a WORKFLOW.md opens with a YAML frontmatter block
// (Frontmatter).
func HasFrontmatter(md []byte) bool {
	_, ok := Frontmatter(md)
	return ok
}

// CompetingMachines is the load-blocking finding of a WORKFLOW.md with frontmatter beside a
// workflow.yaml (spec 01 §1.2, V-31 `layout.competing-machines`); mdFile and yamlFile are
// workspace-relative paths.
func CompetingMachines(mdFile, yamlFile string) Diagnostic {
	return Diagnostic{Severity: sevError, Code: "layout.competing-machines", File: mdFile, Line: 1, Column: 1,
		Message: fmt.Sprintf("%s declares YAML frontmatter but %s is the machine spec; remove the frontmatter from %s (it is prose only).", mdFile, yamlFile, mdFile)}
}

// SingleFileRemoved is the load error of a workflow directory holding only a WORKFLOW.md with
// frontmatter, the removed single-file layout (spec 01 §1.2, V-31 `layout.single-file-removed`).
func SingleFileRemoved(mdFile, yamlFile string) Diagnostic {
	return Diagnostic{Severity: sevError, Code: "layout.single-file-removed", File: mdFile, Line: 1, Column: 1,
		Message: fmt.Sprintf("%s declares the machine in YAML frontmatter, the single-file layout 1.0 removed: move the frontmatter into %s and keep %s as prose only.", mdFile, yamlFile, mdFile)}
}
