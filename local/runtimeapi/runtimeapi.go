// Package runtimeapi fakes the Lambda Runtime API for tests: a function's own runtime
// client (aws-lambda-go's lambda.Start, the loop every bootstrap runs) polls it for
// invocations a test queues, and posts each response to it — a response stream as it is
// written, chunk by chunk, which the test reads as the platform would. The open-source
// Lambda emulator does not proxy response streams; this does, with the real client.
//
// lambda.Start reads AWS_LAMBDA_RUNTIME_API when it starts and never returns, so a test
// process starts its loops once (Start) and dispatches invocations to its tests' handlers
// itself (by the invoked function ARN, say).
package runtimeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/google/uuid"
)

const prefix = "/2018-06-01/runtime/invocation/"

// Server is a fake Runtime API.
type Server struct {
	Addr  string // host:port, the value of AWS_LAMBDA_RUNTIME_API
	queue chan *Invocation
	mu    sync.Mutex
	live  map[string]*Invocation
}

// Invocation is one queued invocation and, once the function answers, its response.
type Invocation struct {
	ID, FunctionARN string
	Payload         []byte
	Deadline        time.Time

	answered    chan struct{} // closed when the response (or error) begins
	contentType string
	body        *buffer
	failure     []byte
	once        sync.Once
}

var (
	startOnce sync.Once
	started   *Server
)

// Start starts the fake (once per process; later calls return the same Server), points
// AWS_LAMBDA_RUNTIME_API at it and runs loops runtime loops of aws-lambda-go over handler
// (lambda.Start's argument): up to loops invocations at once, as that many execution
// environments would serve them.
func Start(loops int, handler any) (*Server, error) {
	var err error
	startOnce.Do(func() {
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return
		}
		s := &Server{Addr: ln.Addr().String(), queue: make(chan *Invocation, 64), live: map[string]*Invocation{}}
		go func() { _ = http.Serve(ln, s) }()
		started = s
		if err = os.Setenv("AWS_LAMBDA_RUNTIME_API", s.Addr); err != nil {
			return
		}
		for range loops {
			go lambda.Start(handler)
		}
	})
	if err == nil && started == nil {
		err = errors.New("runtimeapi: the fake did not start")
	}
	return started, err
}

// Invoke queues an invocation of functionARN with payload, due at deadline.
func (s *Server) Invoke(functionARN string, payload []byte, deadline time.Time) *Invocation {
	inv := &Invocation{ID: uuid.NewString(), FunctionARN: functionARN, Payload: payload, Deadline: deadline, answered: make(chan struct{})}
	s.mu.Lock()
	s.live[inv.ID] = inv
	s.mu.Unlock()
	s.queue <- inv
	return inv
}

// Response waits for the function's answer: its content type and its body as it streams
// (read it to EOF), or the function's error payload as an error.
func (inv *Invocation) Response(ctx context.Context) (string, io.Reader, error) {
	select {
	case <-inv.answered:
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
	if inv.failure != nil {
		return "", nil, fmt.Errorf("the function failed: %s", inv.failure)
	}
	return inv.contentType, inv.body, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	switch {
	case ok && rest == "next" && r.Method == http.MethodGet:
		select {
		case inv := <-s.queue:
			h := w.Header()
			h.Set("Lambda-Runtime-Aws-Request-Id", inv.ID)
			h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.Deadline.UnixMilli(), 10))
			h.Set("Lambda-Runtime-Invoked-Function-Arn", inv.FunctionARN)
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(inv.Payload)
		case <-r.Context().Done():
		}
		return
	case ok && r.Method == http.MethodPost:
		id, what, _ := strings.Cut(rest, "/")
		s.mu.Lock()
		inv := s.live[id]
		s.mu.Unlock()
		if inv == nil {
			http.Error(w, "unknown invocation", http.StatusBadRequest)
			return
		}
		switch what {
		case "response":
			buf := newBuffer()
			inv.once.Do(func() {
				inv.contentType, inv.body = r.Header.Get("Content-Type"), buf
				close(inv.answered)
			})
			_, err := io.Copy(buf, r.Body)
			buf.close(err)
		case "error":
			b, _ := io.ReadAll(r.Body)
			inv.once.Do(func() {
				inv.failure = bytes.Clone(b)
				close(inv.answered)
			})
		default:
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	http.NotFound(w, r)
}

// buffer holds a response as it arrives: the function's writes never wait for the test to
// read (as Lambda's would not), and a read waits for more until the response has ended.
type buffer struct {
	mu   sync.Mutex
	more *sync.Cond
	data []byte
	done bool
	err  error
}

func newBuffer() *buffer {
	b := &buffer{}
	b.more = sync.NewCond(&b.mu)
	return b
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.data = append(b.data, p...)
	b.mu.Unlock()
	b.more.Broadcast()
	return len(p), nil
}

func (b *buffer) close(err error) {
	b.mu.Lock()
	b.done, b.err = true, err
	b.mu.Unlock()
	b.more.Broadcast()
}

func (b *buffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.data) == 0 && !b.done {
		b.more.Wait()
	}
	if len(b.data) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}
