package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store/fs"
)

// RD22-6: `archmax sessions --delete SESSION` deletes a stored session — its log and its
// files, never the shared spec snapshots — with no confirmation; repeating it, or deleting a
// session that never ran, succeeds; a running turn refuses it; usage errors are exit 2.
func TestSessionsDelete(t *testing.T) {
	store := t.TempDir()
	common := []string{"--workspace", ws, "--store", store}
	if code, _, errs := run(t, append([]string{"run", "--session", "d-1", "--model-script", ws + "/model-scripts/happy.model.yaml",
		"access-request", "Hi, I'm Dana from the platform team. I need badge access to the east lab, please."}, common...)...); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, append([]string{"run", "--session", "d-2", "--model-script", ws + "/model-scripts/happy.model.yaml",
		"access-request", "Hi, I'm Dana from the platform team. I need badge access to the east lab, please."}, common...)...); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	sessionFiles := filepath.Join(store, "files", "d-1")
	if _, err := os.Stat(sessionFiles); err != nil {
		t.Fatalf("the session wrote no files: %v", err)
	}
	specs, _ := os.ReadDir(filepath.Join(store, "files", "_specs"))
	if len(specs) == 0 {
		t.Fatal("no spec snapshot stored")
	}

	code, out, errs := run(t, append([]string{"sessions", "--delete", "d-1"}, common...)...)
	// the delete's audit line on stderr (RD22-20)
	if code != exitOK || out != "deleted session 'd-1'\n" || !strings.Contains(errs, `level=INFO msg="session deleted" sessionId=d-1 `) ||
		!strings.Contains(errs, " children=0 files=") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, err := os.Stat(sessionFiles); !os.IsNotExist(err) {
		t.Errorf("the session's files survived: %v", err)
	}
	if after, _ := os.ReadDir(filepath.Join(store, "files", "_specs")); len(after) != len(specs) {
		t.Errorf("spec snapshots: %d → %d", len(specs), len(after))
	}
	if code, _, errs := run(t, append([]string{"sessions", "d-1"}, common...)...); code != exitFail || !strings.Contains(errs, "no session 'd-1'") {
		t.Errorf("show after delete: exit %d, %s", code, errs)
	}
	if code, out, _ := run(t, append([]string{"sessions", "d-2"}, common...)...); code != exitOK || !strings.Contains(out, "d-2") {
		t.Errorf("the other session after the delete: exit %d", code)
	}
	for _, id := range []string{"d-1", "never-ran"} {
		if code, out, errs := run(t, append([]string{"sessions", "--delete", id}, common...)...); code != exitOK || out != "no session '"+id+"' in this store: nothing to delete\n" {
			t.Errorf("delete %s again: exit %d, stdout %q, stderr %q", id, code, out, errs)
		}
	}
	if code, out, _ := run(t, "sessions", "--delete", "x", "--workspace", ws, "--store", filepath.Join(t.TempDir(), "none")); code != exitOK || !strings.Contains(out, "nothing to delete") {
		t.Errorf("delete from a store that does not exist: exit %d %q", code, out)
	}

	// a turn holds d-2: refused, nothing deleted
	log, err := fs.Open(filepath.Join(store, "log"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Acquire(context.Background(), "d-2", "a-turn", time.Hour); err != nil {
		t.Fatal(err)
	}
	log.Close()
	code, _, errs = run(t, append([]string{"sessions", "--delete", "d-2"}, common...)...)
	if code != exitFail || !strings.Contains(errs, "retry the delete once the turn parks or ends") || !strings.Contains(errs, "lease expires at ") {
		t.Errorf("delete during a turn: exit %d, %s (want the retry time)", code, errs)
	}
	// another delete holds d-2 (RD22-17): its own refusal, with the time to repeat after
	if log, err = fs.Open(filepath.Join(store, "log")); err != nil {
		t.Fatal(err)
	}
	if err := log.Release(context.Background(), "d-2", "a-turn"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Acquire(context.Background(), "d-2", "delete/other", time.Hour); err != nil {
		t.Fatal(err)
	}
	log.Close()
	code, _, errs = run(t, append([]string{"sessions", "--delete", "d-2"}, common...)...)
	if code != exitFail || !strings.Contains(errs, "is being deleted by another delete, which holds it until ") || strings.Contains(errs, "turn running") {
		t.Errorf("delete during another delete: exit %d, %s", code, errs)
	}
	if code, _, _ := run(t, append([]string{"sessions", "d-2"}, common...)...); code != exitOK {
		t.Errorf("the refused delete deleted: exit %d", code)
	}

	for _, args := range [][]string{
		{"sessions", "--delete", "d-2", "d-3"},
		{"sessions", "--delete", "d-2", "--json"},
		{"sessions", "--delete", "../x"},
		{"sessions", "--delete", ""},
	} {
		if code, _, errs := run(t, append(args, common...)...); code != exitUsage {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}

// RD22-22: `archmax sessions --keep SESSION` clears the session's retention expiry.
func TestSessionsKeep(t *testing.T) {
	t.Setenv("ARCHMAX_SESSION_TTL", "1h")
	store := t.TempDir()
	common := []string{"--workspace", ws, "--store", store}
	if code, _, errs := run(t, append([]string{"run", "--session", "k-1", "--model-script", ws + "/model-scripts/happy.model.yaml",
		"access-request", "Hi, I'm Dana from the platform team. I need badge access to the east lab, please."}, common...)...); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	expiry := func() int64 {
		log, err := fs.Open(filepath.Join(store, "log"))
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		h, err := log.Get(context.Background(), "k-1")
		if err != nil {
			t.Fatal(err)
		}
		return h.ExpiresAt
	}
	if expiry() == 0 {
		t.Fatal("no expiry with ARCHMAX_SESSION_TTL set")
	}
	code, out, errs := run(t, append([]string{"sessions", "--keep", "k-1"}, common...)...)
	if code != exitOK || !strings.Contains(out, "no retention expiry now") {
		t.Fatalf("--keep: exit %d, %q, %s", code, out, errs)
	}
	if got := expiry(); got != 0 {
		t.Errorf("the expiry after --keep = %d", got)
	}
	if code, out, _ := run(t, append([]string{"sessions", "--keep", "nope"}, common...)...); code != exitOK || !strings.Contains(out, "nothing to keep") {
		t.Errorf("--keep of nothing: exit %d, %q", code, out)
	}
	if code, _, _ := run(t, append([]string{"sessions", "--keep", "k-1", "--delete", "k-1"}, common...)...); code != exitUsage {
		t.Errorf("--keep with --delete: exit %d", code)
	}
}
