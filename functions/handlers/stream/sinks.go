package stream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/metrics"
)

// Response is a streamed answer to a Lambda function URL in RESPONSE_STREAM mode: what the
// function's handler returns. aws-lambda-go sends a response that is an io.Reader (and not
// JSON) as the invocation's response stream with its ContentType; Lambda reads the
// HTTP integration prelude — {"statusCode", "headers"} and eight NUL bytes — then passes
// the rest to the client as it arrives. Close (after the stream, or when the platform stops
// reading) makes the next write of the answer fail, which ends it.
type Response struct{ r *io.PipeReader }

// Read reads the stream.
func (r *Response) Read(p []byte) (int, error) { return r.r.Read(p) }

// Close stops the stream.
func (r *Response) Close() error { return r.r.Close() }

// ContentType is Lambda's content type of an HTTP integration response stream.
func (r *Response) ContentType() string { return "application/vnd.awslambda.http-integration-response" }

// MarshalJSON refuses: a Response is sent as a stream, never as a JSON value.
func (r *Response) MarshalJSON() ([]byte, error) {
	return nil, errors.New("a response stream is not JSON")
}

// Lambda answers req as a Lambda response stream: Serve runs on its own goroutine, writing
// into the returned Response as the runtime reads it.
func (h *Handler) Lambda(ctx context.Context, req events.APIGatewayV2HTTPRequest) *Response {
	pr, pw := pipe()
	go func() {
		h.Serve(ctx, req, &pipeSink{w: pw})
		metrics.Flush(ctx) // what the stream's call recorded after the handler returned
		_ = pw.Close()
	}()
	return &Response{r: pr}
}

// pipeSink writes the prelude, then the body, into a pipe.
type pipeSink struct{ w *io.PipeWriter }

func (s *pipeSink) Header(status int, headers map[string]string) error {
	b, err := json.Marshal(struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers,omitempty"`
	}{status, headers})
	if err != nil {
		return err
	}
	_, err = s.w.Write(append(b, 0, 0, 0, 0, 0, 0, 0, 0))
	return err
}

func (s *pipeSink) Write(p []byte) error {
	_, err := s.w.Write(p)
	return err
}

// HTTP serves a net/http request the HTTP API would answer (ev, built from r as API
// Gateway would) as a stream on rw: `archmax serve`. The call runs on past a client that
// leaves (as a Lambda's does), within the invocation's time WithInvocation sets; the
// stream ends with the client.
func (h *Handler) HTTP(rw http.ResponseWriter, r *http.Request, ev events.APIGatewayV2HTTPRequest) {
	ctx := context.WithoutCancel(r.Context())
	if h.invocation > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.invocation)
		defer cancel()
	}
	h.Serve(ctx, ev, &httpSink{w: rw, rc: http.NewResponseController(rw), gone: r.Context()})
}

// httpSink writes an answer on an http.ResponseWriter, flushing every write.
type httpSink struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	gone context.Context
}

func (s *httpSink) Header(status int, headers map[string]string) error {
	for k, v := range headers {
		s.w.Header().Set(k, v)
	}
	s.w.WriteHeader(status)
	return s.flush()
}

func (s *httpSink) Write(p []byte) error {
	if err := s.gone.Err(); err != nil {
		return err
	}
	if _, err := s.w.Write(p); err != nil {
		return err
	}
	return s.flush()
}

func (s *httpSink) flush() error {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

func pipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }
