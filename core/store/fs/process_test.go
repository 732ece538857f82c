package fs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// Child-process mode of TestTwoProcesses: the test binary re-executes itself with these
// variables set and runs processChild instead of the test.
const (
	childDirEnv  = "ARCHMAX_FSSTORE_CHILD_DIR"
	childModeEnv = "ARCHMAX_FSSTORE_CHILD_MODE"
	childNameEnv = "ARCHMAX_FSSTORE_CHILD_NAME"
)

const (
	raceVersions = 30 // "shared" mode: versions committed by the two processes together
	leasedEach   = 10 // "leased" mode: commits per process
)

// 15-Q1: two processes on one session behave like two Lambdas: with one shared owner the
// version condition alone lets exactly one commit per version through; with an owner each,
// the lease serialises them and no update is lost.
func TestTwoProcesses(t *testing.T) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		if err := processChild(t, dir, os.Getenv(childModeEnv), os.Getenv(childNameEnv)); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Run("shared owner: one commit per version", func(t *testing.T) {
		dir := t.TempDir()
		wins := runChildren(t, dir, "shared")
		winner := map[int64]string{}
		for name, versions := range wins {
			for _, v := range versions {
				if other, ok := winner[v]; ok {
					t.Fatalf("version %d committed by %s and %s", v, other, name)
				}
				winner[v] = name
			}
		}
		s := openStore(t, dir)
		h, err := s.Get(t.Context(), "s1")
		if err != nil || h.Version != raceVersions || h.Messages != raceVersions {
			t.Fatalf("final head = %+v, %v; want v%d", h, err, raceVersions)
		}
		msgs, err := s.Messages(t.Context(), "s1", 0, raceVersions)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			v := int64(i + 1)
			if want := childItem(winner[v], v); !bytes.Equal(m, want) {
				t.Fatalf("message %d = %s, want the winner's %s", i, m, want)
			}
		}
	})
	t.Run("own owners: the lease serialises", func(t *testing.T) {
		dir := t.TempDir()
		wins := runChildren(t, dir, "leased")
		s := openStore(t, dir)
		h, err := s.Get(t.Context(), "s1")
		if err != nil || h.Version != 2*leasedEach || h.Messages != 2*leasedEach {
			t.Fatalf("final head = %+v, %v; want v%d", h, err, 2*leasedEach)
		}
		msgs, err := s.Messages(t.Context(), "s1", 0, h.Messages)
		if err != nil {
			t.Fatal(err)
		}
		for name, versions := range wins {
			if len(versions) != leasedEach {
				t.Fatalf("%s committed %d times, want %d", name, len(versions), leasedEach)
			}
			for _, v := range versions {
				if want := childItem(name, v); !bytes.Equal(msgs[v-1], want) {
					t.Fatalf("message %d = %s, want %s", v-1, msgs[v-1], want)
				}
			}
		}
	})
}

// runChildren runs two child processes in mode on dir and returns the versions each
// committed, by child name.
func runChildren(t *testing.T, dir, mode string) map[string][]int64 {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins = map[string][]int64{}
	)
	for _, name := range []string{"p1", "p2"} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childModeEnv+"="+mode, childNameEnv+"="+name)
		wg.Go(func() {
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v\n%s", name, err, out)
				return
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					wins[name] = append(wins[name], n)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return wins
}

func childItem(name string, version int64) json.RawMessage {
	return fmt.Appendf(nil, `{"writer":%q,"version":%d}`, name, version)
}

// processChild commits to session s1 of the store at dir until its goal, printing
// "committed <version>" for each commit that succeeded.
func processChild(t *testing.T, dir, mode, name string) error {
	s, err := Open(dir)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := t.Context()
	owner := name
	if mode == "shared" {
		owner = "shared"
	}
	for done := 0; ; {
		if mode == "leased" && done == leasedEach {
			return nil
		}
		h, err := s.Acquire(ctx, "s1", owner, time.Minute)
		if errors.Is(err, store.ErrLeaseHeld) {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			return err
		}
		if mode == "shared" && h.Version >= raceVersions {
			return nil
		}
		c := &store.Commit{ExpectedVersion: h.Version, Head: *h, Messages: []json.RawMessage{childItem(name, h.Version+1)}}
		c.Head.Messages++
		_, err = s.Commit(ctx, "s1", owner, c)
		switch {
		case err == nil:
			fmt.Printf("committed %d\n", h.Version+1)
			done++
		case mode == "shared" && errors.Is(err, store.ErrConflict):
		default:
			return err
		}
		if mode == "leased" {
			if err := s.Release(ctx, "s1", owner); err != nil {
				return err
			}
		}
	}
}
