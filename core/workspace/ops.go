package workspace

import (
	"bytes"
	"context"
	"errors"

	"github.com/archmax-ai/archmax/core/store"
)

// The runtime file tools copy_file, move_file and remove_file (BR-22, BR-23). Each acts on
// one file, moves its bytes unchanged (binary included, no line limit) and answers one line;
// results name paths in canonical form. Governance is the kernel's, by the declared paths
// (copy: source read, destination write; move: source remove, destination write; remove:
// file_path remove); what is here is the workspace's own answer.

// copyFile copies one file (BR-22): `{ source: string, destination: string, overwrite?: boolean = false }`.
func (w *Workspace) copyFile(ctx context.Context, a *argReader) (string, error) {
	return w.transfer(ctx, a, verbCopy)
}

// moveFile moves one file (BR-22): `{ source: string, destination: string, overwrite?: boolean = false }`.
// The destination is written and verified before the source is removed, so a failure
// leaves a duplicate, never a loss.
func (w *Workspace) moveFile(ctx context.Context, a *argReader) (string, error) {
	return w.transfer(ctx, a, verbMove)
}

// transfer is copy_file (verbCopy) and move_file (verbMove).
func (w *Workspace) transfer(ctx context.Context, a *argReader, verb string) (string, error) {
	source, _ := a.str("source", true)
	destination, _ := a.str("destination", true)
	overwrite := a.boolean("overwrite")
	if a.invalid() {
		return "", nil
	}
	from, refused := opPath(verb, source)
	if refused != "" {
		return refused, nil
	}
	to, refused := opPath(verb, destination)
	if refused != "" {
		return refused, nil
	}
	if from == to {
		return ontoItself(verb, from), nil
	}
	existed := w.fileExists(ctx, to)
	if existed && !overwrite {
		return alreadyThere(verb, to), nil
	}
	if m, ok := w.MountOf(from); verb == verbMove && ok && m.ReadOnly {
		return moveFromReadOnly(from), nil
	}
	data, why, err := w.readSource(ctx, from)
	switch {
	case err != nil:
		return "", err
	case why != "":
		return cannot(verb, from, why), nil
	}
	if msg, err := w.putVerified(ctx, verb, to, data, existed); err != nil || msg != "" {
		return msg, err
	}
	if verb == verbCopy {
		return copied(from, to, int64(len(data))), nil
	}
	r, _ := w.route(from, false) // routable: readSource read it
	if err := r.files.Delete(ctx, r.key); err != nil {
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return copiedNotRemoved(from, to, reason(err)), nil
	}
	return moved(from, to, int64(len(data))), nil
}

// removeFile deletes one file, never a folder (BR-22): `{ file_path: string }`.
func (w *Workspace) removeFile(ctx context.Context, a *argReader) (string, error) {
	arg, _ := a.str("file_path", true)
	if a.invalid() {
		return "", nil
	}
	p, refused := opPath(verbRemove, arg)
	if refused != "" {
		return refused, nil
	}
	fail := func(why string) (string, error) { return cannot(verbRemove, p, why), nil }
	r, ok := w.route(p, false)
	if !ok {
		return fail(reasonMissing)
	}
	fi, err := r.files.Stat(ctx, r.key)
	switch {
	case err != nil:
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return fail(reason(err))
	case fi.Dir:
		return fail(reasonDir)
	case r.mount != nil && r.mount.ReadOnly:
		return fail(reasonReadOnly)
	}
	if err := r.files.Delete(ctx, r.key); err != nil {
		if err := storeFailure(ctx, err); err != nil {
			return "", err
		}
		return fail(reason(err))
	}
	return removed(p), nil
}

// opPath canonicalises a runtime file tool's path argument. It returns the canonical path,
// or BR-22's whole refusal of an escaping path or the root (naming the path as passed).
func opPath(verb, arg string) (p, refused string) {
	p, err := Canonicalize(arg)
	switch {
	case err != nil:
		return "", cannot(verb, arg, reasonOutside)
	case p == "":
		return "", cannot(verb, arg, reasonRoot)
	}
	return p, ""
}

// fileExists reports whether a file (not a folder) is at canonical path p; a path nothing
// serves, or one the store fails to stat, says nothing either way and counts as free.
func (w *Workspace) fileExists(ctx context.Context, p string) bool {
	r, ok := w.route(p, false)
	if !ok {
		return false
	}
	fi, err := r.files.Stat(ctx, r.key)
	return err == nil && !fi.Dir
}

// readSource reads a copy or move source through the tools' routes. It returns the bytes,
// or BR-22's reason the source was refused; the error is the context's when it ended.
func (w *Workspace) readSource(ctx context.Context, p string) ([]byte, string, error) {
	data, err := w.readTool(ctx, p)
	if err == nil {
		return data, "", nil
	}
	if err := storeFailure(ctx, err); err != nil {
		return nil, "", err
	}
	if errors.Is(err, store.ErrNotFound) {
		if r, ok := w.route(p, false); ok {
			if fi, err := r.files.Stat(ctx, r.key); err == nil && fi.Dir {
				return nil, reasonDir, nil
			}
		}
	}
	return nil, reason(err), nil
}

// putVerified writes data at canonical path p for a copy or move and reads it back (BR-22).
// It returns "" when the store now holds exactly data, else the whole "Error: …" answer; a
// destination the operation created (existed false) and could not fill is removed again.
// The error is the context's when it ended.
func (w *Workspace) putVerified(ctx context.Context, verb, p string, data []byte, existed bool) (string, error) {
	why, err := w.put(ctx, p, data)
	switch {
	case err != nil:
		return "", err
	case why != "":
		return cannotTo(verb, p, why), nil
	}
	r, _ := w.route(p, false) // routable: put wrote it
	back, err := r.files.Read(ctx, r.key)
	if err == nil && bytes.Equal(back, data) {
		return "", nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !existed && r.files.Delete(ctx, r.key) == nil {
		return notKept(verb, p, nothingKept), nil
	}
	return notKept(verb, p, leftAsWritten(p)), nil
}
