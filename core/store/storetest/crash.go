package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/archmax-ai/archmax/core/store"
)

// ErrKilled is what every call through a dead Process answers: nothing more runs in a
// process that died.
var ErrKilled = errors.New("killed: the process died here")

// Process is one process of a crash test that dies at its K-th write — before it (the
// write does not happen) or, with After, after it (the write lands, and its caller never
// learns it did). Every write the process makes through any store wrapped with it
// (CrashLog, CrashFiles, or a test's own wrapper of a client calling Write) counts, in
// order; once it is dead every later call fails with ErrKilled, reads included. K = 0
// never kills: a clean run, whose Writes (and Ops) say how many kill points it has. Safe
// for concurrent use.
type Process struct {
	K     int
	After bool

	mu     sync.Mutex
	writes int
	ops    []string
	dead   bool
}

// NewProcess returns a process that dies at its k-th write (before it, or after it).
func NewProcess(k int, after bool) *Process { return &Process{K: k, After: after} }

// Write runs the write op, named name (for reports), as this process: counted, and the
// process killed before or after it when it is the K-th.
func (p *Process) Write(name string, op func() error) error {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return ErrKilled
	}
	p.writes++
	p.ops = append(p.ops, name)
	kill := p.K > 0 && p.writes == p.K
	if kill {
		p.dead = true
	}
	p.mu.Unlock()
	if kill && !p.After {
		return ErrKilled
	}
	err := op()
	if kill {
		return ErrKilled
	}
	return err
}

// Alive is nil while the process runs, ErrKilled once it died: every read and every other
// effect (a model call, a tool, an asynchronous invocation) checks it first.
func (p *Process) Alive() error {
	if p.Dead() {
		return ErrKilled
	}
	return nil
}

// Dead reports whether the process was killed.
func (p *Process) Dead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// Writes is how many writes the process made or died at.
func (p *Process) Writes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes
}

// Ops names the writes in order (the kill points of a clean run).
func (p *Process) Ops() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ops...)
}

// CrashLog is a store.Log written through a Process: each Acquire, Release, Commit,
// RememberIdempotent, PutIdempotent and Delete is one write (a kill point); reads pass
// through while the process lives.
type CrashLog struct {
	store.Log
	P *Process
}

// NewCrashLog wraps log in a process that dies at its k-th write.
func NewCrashLog(log store.Log, k int, after bool) *CrashLog {
	return &CrashLog{Log: log, P: NewProcess(k, after)}
}

func (c *CrashLog) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (h *store.Head, err error) {
	err = c.P.Write("Acquire", func() error { h, err = c.Log.Acquire(ctx, id, owner, ttl); return err })
	return h, err
}

func (c *CrashLog) Release(ctx context.Context, id, owner string) error {
	return c.P.Write("Release", func() error { return c.Log.Release(ctx, id, owner) })
}

func (c *CrashLog) Commit(ctx context.Context, id, owner string, cm *store.Commit) (h *store.Head, err error) {
	err = c.P.Write("Commit", func() error { h, err = c.Log.Commit(ctx, id, owner, cm); return err })
	return h, err
}

func (c *CrashLog) RememberIdempotent(ctx context.Context, key string, v []byte, ttl time.Duration) (got []byte, ok bool, err error) {
	err = c.P.Write("RememberIdempotent", func() error { got, ok, err = c.Log.RememberIdempotent(ctx, key, v, ttl); return err })
	return got, ok, err
}

func (c *CrashLog) PutIdempotent(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	return c.P.Write("PutIdempotent", func() error { return c.Log.PutIdempotent(ctx, key, v, ttl) })
}

func (c *CrashLog) Delete(ctx context.Context, id string) (ok bool, err error) {
	err = c.P.Write("Delete", func() error { ok, err = c.Log.Delete(ctx, id); return err })
	return ok, err
}

func (c *CrashLog) Get(ctx context.Context, id string) (*store.Head, error) {
	if err := c.P.Alive(); err != nil {
		return nil, err
	}
	return c.Log.Get(ctx, id)
}

func (c *CrashLog) Messages(ctx context.Context, id string, from, to int64) ([]json.RawMessage, error) {
	if err := c.P.Alive(); err != nil {
		return nil, err
	}
	return c.Log.Messages(ctx, id, from, to)
}

func (c *CrashLog) TrailSteps(ctx context.Context, id string, from, to int64) ([]json.RawMessage, error) {
	if err := c.P.Alive(); err != nil {
		return nil, err
	}
	return c.Log.TrailSteps(ctx, id, from, to)
}

func (c *CrashLog) Events(ctx context.Context, id string, from, to int64) ([]json.RawMessage, error) {
	if err := c.P.Alive(); err != nil {
		return nil, err
	}
	return c.Log.Events(ctx, id, from, to)
}

func (c *CrashLog) List(ctx context.Context, opts store.ListOptions) ([]*store.Head, string, error) {
	if err := c.P.Alive(); err != nil {
		return nil, "", err
	}
	return c.Log.List(ctx, opts)
}

func (c *CrashLog) ListDueParks(ctx context.Context, now string, limit int) ([]*store.Head, error) {
	if err := c.P.Alive(); err != nil {
		return nil, err
	}
	return c.Log.ListDueParks(ctx, now, limit)
}

// CrashFiles is a store.Files written through a Process: each Write, WriteIfAbsent and
// Delete is one write (a kill point).
type CrashFiles struct {
	store.Files
	P *Process
}

func (c *CrashFiles) Write(ctx context.Context, key string, data []byte) error {
	return c.P.Write("Files.Write", func() error { return c.Files.Write(ctx, key, data) })
}

func (c *CrashFiles) WriteIfAbsent(ctx context.Context, key string, data []byte) (wrote bool, err error) {
	err = c.P.Write("Files.WriteIfAbsent", func() error { wrote, err = c.Files.WriteIfAbsent(ctx, key, data); return err })
	return wrote, err
}

func (c *CrashFiles) Delete(ctx context.Context, key string) error {
	return c.P.Write("Files.Delete", func() error { return c.Files.Delete(ctx, key) })
}

func (c *CrashFiles) Read(ctx context.Context, key string) ([]byte, error) {
	if err := c.P.Alive(); err != nil {
		return nil, err
	}
	return c.Files.Read(ctx, key)
}

func (c *CrashFiles) List(ctx context.Context, prefix string) ([]store.FileInfo, error) {
	if err := c.P.Alive(); err != nil {
		return nil, err
	}
	return c.Files.List(ctx, prefix)
}

func (c *CrashFiles) Stat(ctx context.Context, key string) (*store.FileInfo, error) {
	if err := c.P.Alive(); err != nil {
		return nil, err
	}
	return c.Files.Stat(ctx, key)
}
