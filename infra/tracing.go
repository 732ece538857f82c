package main

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// Trace export of the functions (docs/operations.md "Traces"; DECISIONS TR22-6): off
// unless one of these is given.
const (
	// CtxTracing "adot": every function that runs the engine gets the ADOT collector layer
	// (CtxADOTLayerARN) and sends its spans to the layer's collector, which exports them
	// to X-Ray. "" (default): no spans are exported.
	CtxTracing = "tracing"
	// CtxADOTLayerARN is the AWS Distro for OpenTelemetry collector layer version for the
	// region and arm64 (the layer's own documentation lists them), required with tracing=adot.
	CtxADOTLayerARN = "adotLayerArn"
	// CtxOTLPEndpoint sends the spans to a collector of the operator's own (an OTLP/HTTP
	// base URL the functions can reach) instead; not with tracing=adot.
	CtxOTLPEndpoint = "otlpEndpoint"
)

// TracingADOT is the CtxTracing value that adds the ADOT collector layer.
const TracingADOT = "adot"

// ADOTCollectorEndpoint is where the layer's collector takes OTLP/HTTP.
const ADOTCollectorEndpoint = "http://localhost:4318"

// EnvOTLPEndpoint is the standard variable the functions read (functions/handlers/tracing).
const EnvOTLPEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"

// TracedFunctions run the engine, so have spans to export; sessions only reads.
var TracedFunctions = []string{FnTurn, FnDecide, FnDeliver, FnWake, FnStream}

// Tracing is the trace export of a deployment: Mode TracingADOT with LayerARN, or an
// Endpoint of the operator's collector, or neither (off).
type Tracing struct {
	Mode     string
	LayerARN string
	Endpoint string
}

var layerARNRe = regexp.MustCompile(`^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]+:\d+$`)

// tracingFromContext reads the tracing parameters (get as in ConfigFromContext).
func tracingFromContext(get func(key, def string) string) (Tracing, error) {
	t := Tracing{Mode: get(CtxTracing, ""), LayerARN: get(CtxADOTLayerARN, ""), Endpoint: get(CtxOTLPEndpoint, "")}
	return t, t.check()
}

// check refuses what cannot work: an unknown mode, adot without a layer version ARN (or a
// layer without adot), both the layer and an endpoint, an endpoint that is not an http(s) URL.
func (t Tracing) check() error {
	switch {
	case t.Mode != "" && t.Mode != TracingADOT:
		return fmt.Errorf("context %s: %q; want %s (or unset: no trace export)", CtxTracing, t.Mode, TracingADOT)
	case t.Mode == TracingADOT && !layerARNRe.MatchString(t.LayerARN):
		return fmt.Errorf("context %s=%s needs %s, the ADOT collector layer version ARN for the region and arm64 (arn:aws:lambda:<region>:<account>:layer:<name>:<version>); got %q",
			CtxTracing, TracingADOT, CtxADOTLayerARN, t.LayerARN)
	case t.Mode == "" && t.LayerARN != "":
		return fmt.Errorf("context %s is used with %s=%s", CtxADOTLayerARN, CtxTracing, TracingADOT)
	case t.Mode == TracingADOT && t.Endpoint != "":
		return fmt.Errorf("context %s=%s sends the spans to the layer's collector; %s is for a collector of your own: give one of them", CtxTracing, TracingADOT, CtxOTLPEndpoint)
	}
	if t.Endpoint != "" {
		if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("context %s: %q is not an http(s) URL with a host", CtxOTLPEndpoint, t.Endpoint)
		}
	}
	return nil
}

// apply adds fn's part of the trace export to its props and environment: the layer and
// the collector's endpoint, or the operator's endpoint. X-Ray's write permissions are
// already the function's (Tracing: Active, OP22-8).
func (t Tracing) apply(s *Stack, fn string, props *awslambda.FunctionProps, env map[string]*string) {
	if !slices.Contains(TracedFunctions, fn) {
		return
	}
	switch {
	case t.Mode == TracingADOT:
		layer := awslambda.LayerVersion_FromLayerVersionArn(s.Stack, jsii.String(titleCase(fn)+"ADOTLayer"), jsii.String(t.LayerARN))
		props.Layers = &[]awslambda.ILayerVersion{layer}
		env[EnvOTLPEndpoint] = jsii.String(ADOTCollectorEndpoint)
	case t.Endpoint != "":
		env[EnvOTLPEndpoint] = jsii.String(t.Endpoint)
	}
}
