package stream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/functions/handlers/continuation"
)

// Environment of the streaming function: with both set, its function URL's auth type is
// NONE and the function verifies the stack's JWTs itself (JWT); without them the URL is
// AWS_IAM and the caller is the SigV4 signer Lambda names.
const (
	EnvJWTIssuer   = "ARCHMAX_JWT_ISSUER"
	EnvJWTAudience = "ARCHMAX_JWT_AUDIENCE" // comma-separated
)

// JWTFromEnv is the JWT verifier the environment configures (nil: IAM); an error when only
// one of the two variables is set.
func JWTFromEnv(getenv func(string) string) (*JWT, error) {
	iss, aud := strings.TrimSpace(getenv(EnvJWTIssuer)), strings.TrimSpace(getenv(EnvJWTAudience))
	if iss == "" && aud == "" {
		return nil, nil
	}
	if iss == "" || aud == "" {
		return nil, errors.New(EnvJWTIssuer + " and " + EnvJWTAudience + " are set together or not at all")
	}
	var list []string
	for _, a := range strings.Split(aud, ",") {
		if a = strings.TrimSpace(a); a != "" {
			list = append(list, a)
		}
	}
	return &JWT{Issuer: iss, Audience: list}, nil
}

// FromFunctionURL is the HTTP API request (payload format 2.0, route $default) a function
// URL request stands for — the same fields, the IAM caller as IAM authorization's.
func FromFunctionURL(u events.LambdaFunctionURLRequest) events.APIGatewayV2HTTPRequest {
	rc := u.RequestContext
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: u.RawPath, RawQueryString: u.RawQueryString,
		Cookies: u.Cookies, Headers: u.Headers, QueryStringParameters: u.QueryStringParameters,
		Body: u.Body, IsBase64Encoded: u.IsBase64Encoded,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", AccountID: rc.AccountID, Stage: "$default", RequestID: rc.RequestID,
			APIID: rc.APIID, DomainName: rc.DomainName, DomainPrefix: rc.DomainPrefix, Time: rc.Time, TimeEpoch: rc.TimeEpoch,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: rc.HTTP.Method, Path: rc.HTTP.Path,
				Protocol: rc.HTTP.Protocol, SourceIP: rc.HTTP.SourceIP, UserAgent: rc.HTTP.UserAgent},
		},
	}
	if rc.Authorizer != nil && rc.Authorizer.IAM != nil {
		iam := rc.Authorizer.IAM
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{AccessKey: iam.AccessKey, AccountID: iam.AccountID, CallerID: iam.CallerID,
				UserARN: iam.UserARN, UserID: iam.UserID},
		}
	}
	return req
}

// Function is the streaming function's Lambda handler: a function URL request is answered
// as a response stream (*Response); a continuation event — a turn this function handed on —
// is run by run. With jwt, a request's bearer token is verified first (401 without a valid
// one) and stands for its caller; without, only the IAM caller the URL names does (an
// authorizer context from the request itself is never read).
func Function(h *Handler, run *continuation.Runner, jwt *JWT) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		if ref, ok, err := continuation.Parse(raw); ok {
			if err != nil {
				return nil, err
			}
			return run.Handle(ctx, ref)
		}
		var u events.LambdaFunctionURLRequest
		if err := json.Unmarshal(raw, &u); err != nil || u.RequestContext.HTTP.Method == "" {
			return nil, errors.New("stream: want a Lambda function URL request or a continuation event")
		}
		req := FromFunctionURL(u)
		if jwt != nil {
			req.RequestContext.Authorizer = nil
			if err := jwt.Authorize(ctx, &req); err != nil {
				var te *TokenError
				if !errors.As(err, &te) {
					h.log.ErrorContext(ctx, "bearer token not verified", "error", err.Error())
				}
				return h.refusal(http.StatusUnauthorized, CodeUnauthorized,
					"The request needs 'Authorization: Bearer <token>' with a valid token of this API's issuer and audience."), nil
			}
		}
		return h.Lambda(ctx, req), nil
	}
}

// refusal is a response stream holding only a JSON refusal.
func (h *Handler) refusal(status int, code, message string) *Response {
	pr, pw := pipe()
	go func() {
		refuse(&pipeSink{w: pw}, status, code, message)
		_ = pw.Close()
	}()
	return &Response{r: pr}
}
