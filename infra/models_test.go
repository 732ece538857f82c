package main

import (
	"slices"
	"strings"
	"testing"
)

// TestModelCallersMayStream: every function whose role may call a model with Converse
// (bedrock:InvokeModel) may call the same models, under the same conditions, with
// ConverseStream (bedrock:InvokeModelWithResponseStream), and no other role may stream.
func TestModelCallersMayStream(t *testing.T) {
	const converse, stream = "Allow bedrock:InvokeModel ", "Allow bedrock:InvokeModelWithResponseStream "
	callers := 0
	for fn, id := range functionIDs(t) {
		role := strings.TrimSuffix(strings.TrimPrefix(render(props(resources("AWS::Lambda::Function")[id])["Role"]), "${"), ".Arn}")
		var whole, streamed []string
		for _, g := range grantsOf(role) {
			if rest, ok := strings.CutPrefix(g, converse); ok {
				whole = append(whole, rest)
			}
			if rest, ok := strings.CutPrefix(g, stream); ok {
				streamed = append(streamed, rest)
			}
		}
		if !slices.Equal(whole, streamed) {
			t.Errorf("%s: InvokeModel on %v, InvokeModelWithResponseStream on %v", fn, whole, streamed)
		}
		if AccessOf[fn].Models != (len(streamed) > 0) {
			t.Errorf("%s: calls a model %t, may stream on %v", fn, AccessOf[fn].Models, streamed)
		}
		if len(streamed) > 0 {
			callers++
		}
	}
	if callers == 0 {
		t.Error("no function may call a model")
	}
}
