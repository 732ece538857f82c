package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
)

const testADOTLayer = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"

// TestTracingLayer: with tracing=adot every function that runs the engine has the ADOT
// collector layer and sends its spans to the layer's collector; sessions (reads only) has
// neither; without the parameter (the main template) no function has a layer or an OTLP
// endpoint.
func TestTracingLayer(t *testing.T) {
	for id, r := range resources("AWS::Lambda::Function") {
		p := props(r)
		if name, _ := p["FunctionName"].(string); !strings.HasPrefix(name, "archmax-test-") {
			continue // CDK's own (the workspace upload's)
		}
		if p["Layers"] != nil {
			t.Errorf("function %s has layers without tracing: %v", id, p["Layers"])
		}
		if vars := p["Environment"].(map[string]any)["Variables"].(map[string]any); vars[EnvOTLPEndpoint] != nil {
			t.Errorf("function %s has %s without tracing", id, EnvOTLPEndpoint)
		}
	}
	cfg := testCfg
	cfg.Workspace = nil
	cfg.Tracing = Tracing{Mode: TracingADOT, LayerARN: testADOTLayer}
	must(cfg.Check())
	traced := assertions.Template_FromStack(NewStack(awscdk.NewApp(nil), cfg).Stack, nil).ToJSON()
	tj := map[string]any{}
	for k, v := range *traced {
		tj[k] = v
	}
	got := map[string]bool{}
	for _, r := range resourcesOf(tj, "AWS::Lambda::Function") {
		p := props(r)
		name, _ := p["FunctionName"].(string)
		if !strings.HasPrefix(name, "archmax-test-") {
			continue
		}
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		layers, _ := p["Layers"].([]any)
		if name == cfg.FunctionName(FnSessions) {
			if layers != nil || vars[EnvOTLPEndpoint] != nil {
				t.Errorf("sessions is traced: layers %v, endpoint %v", layers, vars[EnvOTLPEndpoint])
			}
			continue
		}
		if len(layers) != 1 || layers[0] != testADOTLayer || vars[EnvOTLPEndpoint] != ADOTCollectorEndpoint {
			t.Errorf("%s: layers %v, %s %v; want the ADOT layer and %s", name, layers, EnvOTLPEndpoint, vars[EnvOTLPEndpoint], ADOTCollectorEndpoint)
		}
		if p["TracingConfig"].(map[string]any)["Mode"] != "Active" {
			t.Errorf("%s: X-Ray tracing not active", name)
		}
		got[name] = true
	}
	if len(got) != len(TracedFunctions) {
		t.Errorf("traced functions %v, want %v", got, TracedFunctions)
	}
}

// TestTracingFromContext: the parameters and their refusals, through the CDK context.
func TestTracingFromContext(t *testing.T) {
	build := t.TempDir()
	for _, fn := range FunctionNames {
		must(os.MkdirAll(filepath.Join(build, fn), 0o755))
		must(os.WriteFile(filepath.Join(build, fn, "bootstrap"), nil, 0o755))
	}
	ctx := func(kv map[string]any) (Config, error) {
		kv[CtxBuildDir] = build
		return ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &kv}))
	}
	c, err := ctx(map[string]any{})
	if err != nil || c.Tracing != (Tracing{}) {
		t.Errorf("default: %+v %v", c.Tracing, err)
	}
	c, err = ctx(map[string]any{CtxTracing: "adot", CtxADOTLayerARN: testADOTLayer})
	if err != nil || c.Tracing != (Tracing{Mode: TracingADOT, LayerARN: testADOTLayer}) {
		t.Errorf("adot: %+v %v", c.Tracing, err)
	}
	c, err = ctx(map[string]any{CtxOTLPEndpoint: "https://collector.internal:4318"})
	if err != nil || c.Tracing.Endpoint != "https://collector.internal:4318" {
		t.Errorf("endpoint: %+v %v", c.Tracing, err)
	}
	for name, kv := range map[string]map[string]any{
		"unknown mode":       {CtxTracing: "xray"},
		"adot without layer": {CtxTracing: "adot"},
		"not a layer arn":    {CtxTracing: "adot", CtxADOTLayerARN: "aws-otel-collector-arm64"},
		"layer without adot": {CtxADOTLayerARN: testADOTLayer},
		"both":               {CtxTracing: "adot", CtxADOTLayerARN: testADOTLayer, CtxOTLPEndpoint: "http://c:4318"},
		"endpoint no scheme": {CtxOTLPEndpoint: "collector:4318"},
	} {
		if _, err := ctx(kv); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
