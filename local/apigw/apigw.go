// Package apigw emulates an API Gateway HTTP API (payload format 2.0) in front of a Lambda
// handler, for `archmax serve` and tests: each net/http request becomes the
// events.APIGatewayV2HTTPRequest a `$default` route would deliver (lower-cased headers,
// multi-value headers joined with ",", the body base64-encoded, a request id), and the
// handler's events.APIGatewayV2HTTPResponse is written back.
package apigw

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
)

// LambdaHandler is a Lambda function body serving API Gateway HTTP API events.
type LambdaHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// MaxBodyBytes is the largest request body forwarded: 10 MiB, API Gateway's payload quota.
// A larger body is answered 413 without calling the handler.
const MaxBodyBytes = 10 << 20

// Handler serves HTTP requests through fn. A Go error from fn (a Lambda invocation
// error) is answered 500 {"message":"Internal Server Error"}, as API Gateway does, and
// logged to log (nil discards).
func Handler(fn LambdaHandler, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, `{"message":"Bad Request"}`)
			return
		}
		if len(body) > MaxBodyBytes {
			writeJSON(w, http.StatusRequestEntityTooLarge, `{"message":"Request Entity Too Large"}`)
			return
		}
		// API Gateway never cancels a Lambda whose caller went away: the work runs on (the
		// handler bounds its own time), only the answer is lost.
		resp, err := fn(context.WithoutCancel(r.Context()), Request(r, body))
		if err != nil {
			log.ErrorContext(r.Context(), "the handler failed", "method", r.Method, "path", r.URL.Path, "error", err.Error())
			writeJSON(w, http.StatusInternalServerError, `{"message":"Internal Server Error"}`)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		for k, vs := range resp.MultiValueHeaders {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		status := resp.StatusCode
		if status == 0 {
			status = http.StatusOK
		}
		out := []byte(resp.Body)
		if resp.IsBase64Encoded {
			if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
				writeJSON(w, http.StatusInternalServerError, `{"message":"Internal Server Error"}`)
				return
			}
		}
		w.WriteHeader(status)
		_, _ = w.Write(out)
	})
}

// Request builds the payload-2.0 event of r with body (already read): route key
// `$default`, raw path and query, lower-cased headers, query parameters, cookies, source IP, a fresh request
// id and the current time.
func Request(r *http.Request, body []byte) events.APIGatewayV2HTTPRequest {
	headers := make(map[string]string, len(r.Header))
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	var cookies []string
	for _, c := range r.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	now := time.Now()
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = make(map[string]string, len(q))
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	return events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              "$default",
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		QueryStringParameters: query,
		Cookies:               cookies,
		Headers:               headers,
		Body:                  base64.StdEncoding.EncodeToString(body),
		IsBase64Encoded:       true,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:  "$default",
			Stage:     "$default",
			RequestID: uuid.NewString(),
			Time:      now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent(),
			},
		},
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}
