package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	fsstore "github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/local/runner"
)

// What a person deciding a park sees — at the park (`archmax run`, `decide`, `deliver`,
// `reply` on stderr) and in `archmax sessions ID` — is written here once: the state's title,
// summary and instructions, each transition with its description, and each evidence file's
// content, bounded, with its size and where it lies.

// The bounds of one evidence file's content: the first evidenceLines lines, at most
// evidenceBytes of text.
const (
	evidenceLines = 40
	evidenceBytes = 8 << 10
)

// instructionsChars bounds the instructions printed with a pending decision (one line).
const instructionsChars = 400

// parkReader reads what a decision shows beyond the park record: the state's texts from the
// workspace, the evidence files from the session's files, and where a file lies on disk.
type parkReader struct {
	// texts is the state's summary and instructions ("" when the workspace does not hold
	// the workflow, or it does not load).
	texts func(workflow, state string) (summary, instructions string)
	// file reads a session's file by its workspace path (nil: evidence is listed, not read).
	file func(ctx context.Context, sessionID, path string) ([]byte, error)
	// where is the file's location for the person, "" when it is not on a local disk.
	where func(sessionID, path string) string
	// folder is the folder of the session's files on a local disk (nil: not on one).
	folder func(sessionID string) string
}

// localFilePath is where the fs store under storeDir keeps a session's file.
func localFilePath(storeDir string) func(sessionID, p string) string {
	return func(sessionID, p string) string {
		return fsstore.DiskPath(filepath.Join(storeDir, "files"), sessionID+"/"+evidenceKey(p))
	}
}

// evidenceKey is an evidence path as the session's files key it: relative, cleaned.
func evidenceKey(p string) string { return path.Clean(strings.TrimLeft(p, "/")) }

// stateTexts reads a state's summary and instructions from the workspace's workflow.yaml.
func stateTexts(workspace string) func(workflow, state string) (string, string) {
	return func(workflow, state string) (string, string) {
		if !spec.IsSlug(workflow) {
			return "", ""
		}
		file := "workflows/" + workflow + "/workflow.yaml"
		src, err := os.ReadFile(filepath.Join(workspace, filepath.FromSlash(file)))
		if err != nil {
			return "", ""
		}
		sp, err := spec.Load(workflow, file, src)
		if err != nil || sp.State(state) == nil {
			return "", ""
		}
		st := sp.State(state)
		return strings.TrimSpace(st.Summary), strings.TrimSpace(st.Instructions)
	}
}

// writeChoices writes a pending decision's texts and choices, each line after indent: the
// title, the summary, the instructions (one line, bounded), the approvers, and every
// transition with its type and description. workflow is the workflow of the parked state
// (a sub-workflow's for a delegated park).
func writeChoices(w io.Writer, indent string, d *session.PendingDecision, workflow string, pr parkReader) {
	if d.Title != "" {
		fmt.Fprintf(w, "%s%s\n", indent, clean(d.Title))
	}
	if pr.texts != nil {
		summary, instructions := pr.texts(workflow, d.State)
		if summary != "" {
			fmt.Fprintf(w, "%ssummary: %s\n", indent, clean(oneLine(summary, instructionsChars)))
		}
		if instructions != "" {
			fmt.Fprintf(w, "%sinstructions: %s\n", indent, clean(oneLine(instructions, instructionsChars)))
		}
	}
	if len(d.Approvers) > 0 {
		fmt.Fprintf(w, "%sapprovers: %s\n", indent, clean(strings.Join(d.Approvers, ", ")))
	}
	for _, t := range d.Transitions {
		line := indent + "→ " + t.To
		if t.Type != "" && t.Type != "none" {
			line += " [" + t.Type + "]"
		}
		if t.Description != "" {
			line += " — " + clean(oneLine(t.Description, 160))
		}
		fmt.Fprintln(w, line)
	}
}

// writeEvidence writes each evidence file of a pending decision: a line with its path, size
// and location, then its content, indented once more and bounded (evidenceLines,
// evidenceBytes); a binary file is described, not printed. owner is the session whose files
// hold it (the sub-workflow child for a delegated park).
func writeEvidence(ctx context.Context, w io.Writer, indent string, d *session.PendingDecision, owner string, pr parkReader) {
	for _, p := range d.Evidence {
		head := indent + "evidence " + clean(p)
		var data []byte
		var err error
		if pr.file != nil {
			data, err = pr.file(ctx, owner, p)
		}
		where := ""
		if pr.where != nil {
			where = pr.where(owner, p)
		}
		switch {
		case pr.file == nil:
			if where != "" {
				head += " (" + clean(where) + ")"
			}
			fmt.Fprintln(w, head)
			continue
		case err != nil:
			fmt.Fprintf(w, "%s\n%s    (not present: the session has not written it)\n", head, indent)
			continue
		}
		size := byteSize(len(data))
		if where != "" {
			size += ", " + clean(where)
		}
		fmt.Fprintf(w, "%s (%s)\n", head, size)
		if !printable(data) {
			fmt.Fprintf(w, "%s    (binary: not shown)\n", indent)
			continue
		}
		for _, l := range evidenceText(string(data)) {
			fmt.Fprintln(w, strings.TrimRight(indent+"    "+l, " "))
		}
	}
}

// evidenceText is a file's text as printed lines, cleaned and bounded, with a last line
// saying what was left out.
func evidenceText(text string) []string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return []string{"(empty)"}
	}
	all := strings.Split(text, "\n")
	var out []string
	used := 0
	for i, l := range all {
		if i == evidenceLines || used >= evidenceBytes {
			out = append(out, fmt.Sprintf("… %d more line(s), %s not shown", len(all)-i, byteSize(len(text)-used)))
			break
		}
		if used+len(l) > evidenceBytes { // a long line: its head, up to the bound
			cut := evidenceBytes - used
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			out = append(out, clean(l[:cut])+"…")
			out = append(out, fmt.Sprintf("… %s not shown", byteSize(len(text)-used-cut)))
			break
		}
		out = append(out, clean(l))
		used += len(l) + 1
	}
	return out
}

// byteSize words a size: "83 bytes", "1.2 KiB", "3.4 MiB".
func byteSize(n int) string {
	switch {
	case n < 0:
		n = 0
		fallthrough
	case n < 1024:
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

// decisionWorkflowAndOwner is the workflow of a pending decision's state and the session
// holding its files: the session's own, or the innermost sub-workflow child's.
func decisionWorkflowAndOwner(sessionID, workflow string, delegation *session.DelegatedPark) (string, string) {
	if dp := innermost(delegation); dp != nil {
		return dp.Workflow, dp.SessionID
	}
	return workflow, sessionID
}

// filesWhere is where the command's local store keeps session files (nil with --aws: they
// are in S3).
func (f *runFlags) filesWhere() func(sessionID, path string) string {
	if f.aws {
		return nil
	}
	return localFilePath(f.storeDir())
}

// filesFolder is the folder of a session's files in the command's local store (nil with
// --aws).
func (f *runFlags) filesFolder() func(sessionID string) string {
	if f.aws {
		return nil
	}
	dir := filepath.Join(f.storeDir(), "files")
	return func(sessionID string) string { return fsstore.DiskPath(dir, sessionID) + string(filepath.Separator) }
}

// withParkReader gives r what a park report shows beyond the park record, read through env.
func (f *runFlags) withParkReader(r *renderer, env *runner.Env) {
	pr := parkReader{texts: stateTexts(f.workspace), where: f.filesWhere()}
	if s, err := env.Sessions(); err == nil {
		pr.file = s.File
	}
	r.reader = &pr
}

// decisionDetail is the park report's body under its ⏸ line (see writeChoices and
// writeEvidence), for the renderer.
func (r *renderer) decisionDetail(ctx context.Context, o *session.Outcome) string {
	p := o.Pending
	if p == nil || p.Decision == nil || r.reader == nil {
		return ""
	}
	var b strings.Builder
	workflow, owner := decisionWorkflowAndOwner(o.SessionID, r.workflow, p.Delegation)
	writeChoices(&b, "  ", p.Decision, workflow, *r.reader)
	writeEvidence(ctx, &b, "  ", p.Decision, owner, *r.reader)
	return b.String()
}
