package apigw

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Streamer answers a request with a response stream (Server-Sent Events, as a function URL
// in RESPONSE_STREAM mode would): it writes on w as it goes, flushing.
type Streamer func(w http.ResponseWriter, r *http.Request, ev events.APIGatewayV2HTTPRequest)

// Streaming serves the requests accepts picks — asked for with Accept: text/event-stream —
// with stream, given the payload-2.0 event of each (Request), and every other request with
// next. The body of a request that asks for a stream is read once (MaxBodyBytes, else
// 413) and handed on either way.
func Streaming(next http.Handler, accepts func(events.APIGatewayV2HTTPRequest) bool, stream Streamer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(strings.ToLower(strings.Join(r.Header.Values("Accept"), ",")), "text/event-stream") {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, `{"message":"Bad Request"}`)
			return
		}
		if len(body) > MaxBodyBytes {
			writeJSON(w, http.StatusRequestEntityTooLarge, `{"message":"Request Entity Too Large"}`)
			return
		}
		ev := Request(r, body)
		if !accepts(ev) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		stream(w, r, ev)
	})
}
