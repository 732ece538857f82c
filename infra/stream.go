package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
)

// The streaming function's own environment (functions/handlers/stream: EnvJWTIssuer,
// EnvJWTAudience): set when the stack authorizes with JWTs.
const (
	EnvJWTIssuer   = "ARCHMAX_JWT_ISSUER"
	EnvJWTAudience = "ARCHMAX_JWT_AUDIENCE"
)

// streamURL: the streaming function's URL in RESPONSE_STREAM mode (API Gateway HTTP APIs
// do not stream; DECISIONS SS21-1). Its auth is the stack's: AWS_IAM (SigV4 with
// lambda:InvokeFunctionUrl) under IAM authorization; under a JWT authorizer NONE, the
// function verifying the bearer token against the same issuer and audience (its
// ARCHMAX_JWT_ISSUER and ARCHMAX_JWT_AUDIENCE) before anything else runs.
func (s *Stack) streamURL() {
	auth := awslambda.FunctionUrlAuthType_AWS_IAM
	if s.Config.JWTIssuer != "" {
		auth = awslambda.FunctionUrlAuthType_NONE
	}
	s.StreamURL = s.Functions[FnStream].AddFunctionUrl(&awslambda.FunctionUrlOptions{
		AuthType:   auth,
		InvokeMode: awslambda.InvokeMode_RESPONSE_STREAM,
	})
}

// streamAuth words the stream URL's auth for its output.
func (s *Stack) streamAuth() string {
	if s.Config.JWTIssuer != "" {
		return "a bearer token of the stack's JWT issuer and audience, verified by the function"
	}
	return "IAM-signed requests: lambda:InvokeFunctionUrl on the stream function"
}
