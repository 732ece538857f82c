package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/validate"
)

// `archmax serve` on a workspace with a workflow that does not load: it says so at start,
// with the findings as `archmax validate` prints them, and keeps serving the others; a
// request that reaches that workflow is answered 422 WorkflowLoadError with the findings
// (details.diagnostics) — the author's document to fix, not a server failure (the deployed
// functions answer it 500: there the spec was uploaded by an operator).

// reportUnloadable checks every workflow of the workspace and prints, for each that does not
// load, its error findings on w; it returns their slugs.
func reportUnloadable(ctx context.Context, workspace string, w io.Writer) []string {
	files, err := fs.OpenFilesReadOnly(workspace)
	if err != nil {
		return nil
	}
	defer files.Close()
	slugs, err := validate.Workflows(ctx, files)
	if err != nil {
		return nil
	}
	host, err := validate.ReadHost(ctx, files)
	if err != nil {
		return nil
	}
	var bad []string
	for _, slug := range slugs {
		file := "workflows/" + slug + "/workflow.yaml"
		src, err := files.Read(ctx, file)
		if err != nil {
			continue // not a workflow folder: validate says so
		}
		if sp, err := spec.Load(slug, file, src); err == nil && spec.CheckRuntimeContract(slug, sp) == nil {
			continue
		}
		bad = append(bad, slug)
		fmt.Fprintf(w, "archmax serve: workflow '%s' does not load; its requests are answered 422 until it is fixed ('archmax validate %s'):\n", slug, slug)
		res, err := validate.Workflow(ctx, files, slug, validate.Options{Host: host})
		if err != nil {
			fmt.Fprintf(w, "    %v\n", err)
			continue
		}
		for _, d := range res.Diagnostics {
			if d.Severity == "error" {
				fmt.Fprintf(w, "  %s\n", diagnosticLine(d))
				if d.Hint != "" {
					fmt.Fprintf(w, "      hint: %s\n", d.Hint)
				}
			}
		}
	}
	return bad
}

// diagnosticLine is a finding as validate prints it: file:line:col: severity code: message [field].
func diagnosticLine(d spec.Diagnostic) string {
	loc := d.File
	switch {
	case d.Line > 0 && d.Column > 0:
		loc = fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
	case d.Line > 0:
		loc = fmt.Sprintf("%s:%d", d.File, d.Line)
	}
	field := ""
	if d.Field != "" {
		field = " [" + d.Field + "]"
	}
	return fmt.Sprintf("%s: %s %s: %s%s", loc, d.Severity, d.Code, d.Message, field)
}

// unloadableIs422 answers a request that failed because its workflow does not load
// (WorkflowLoadError, UnsupportedRuntimeContractError: 500 in the HTTP contract) 422 with
// the same body; every other answer passes through untouched.
func unloadableIs422(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &held{ResponseWriter: w}
		next.ServeHTTP(bw, r)
		if !bw.holding {
			return
		}
		status := http.StatusInternalServerError
		var body struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(bw.buf.Bytes(), &body) == nil {
			switch body.Error.Code {
			case "WorkflowLoadError", "UnsupportedRuntimeContractError":
				status = http.StatusUnprocessableEntity
			}
		}
		w.WriteHeader(status)
		_, _ = w.Write(bw.buf.Bytes())
	})
}

// held passes an answer through, except a 500, whose body it holds for unloadableIs422.
type held struct {
	http.ResponseWriter
	holding, wrote bool
	buf            bytes.Buffer
}

func (h *held) WriteHeader(code int) {
	if h.wrote || h.holding {
		return
	}
	if code == http.StatusInternalServerError {
		h.holding = true
		return
	}
	h.wrote = true
	h.ResponseWriter.WriteHeader(code)
}

func (h *held) Write(b []byte) (int, error) {
	if !h.wrote && !h.holding {
		h.WriteHeader(http.StatusOK)
	}
	if h.holding {
		return h.buf.Write(b)
	}
	return h.ResponseWriter.Write(b)
}

// Flush passes a flush through (never while an answer is held).
func (h *held) Flush() {
	if f, ok := h.ResponseWriter.(http.Flusher); ok && !h.holding {
		f.Flush()
	}
}
