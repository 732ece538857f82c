package main

import (
	"testing"
)

// resourcesOf are the resources of type typ in a synthesized template's JSON.
func resourcesOf(tmpl map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tmpl["Resources"].(map[string]any) {
		if r := r.(map[string]any); r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

// functionID is the logical id of the stage's function fn in tmpl.
func functionID(t *testing.T, tmpl map[string]any, fn string) string {
	t.Helper()
	for id, r := range resourcesOf(tmpl, "AWS::Lambda::Function") {
		if props(r)["FunctionName"] == "archmax-test-"+fn {
			return id
		}
	}
	t.Fatalf("no function %s", fn)
	return ""
}

// The streaming endpoint: one function URL, in RESPONSE_STREAM mode, on the stream
// function; AWS_IAM under IAM authorization (no public invoke permission), NONE under a
// JWT authorizer with the function given the stack's issuer and audience to verify — and
// the StreamUrl output naming it.
func TestStreamURL(t *testing.T) {
	for _, v := range []struct {
		name string
		tmpl map[string]any
		auth string
	}{{"iam", tmplJSON, "AWS_IAM"}, {"jwt", jwtJSON, "NONE"}} {
		t.Run(v.name, func(t *testing.T) {
			stream := functionID(t, v.tmpl, FnStream)
			urls := resourcesOf(v.tmpl, "AWS::Lambda::Url")
			if len(urls) != 1 {
				t.Fatalf("%d function URLs, want the stream function's one", len(urls))
			}
			var urlID string
			for id, u := range urls {
				urlID = id
				p := props(u)
				if p["AuthType"] != v.auth || p["InvokeMode"] != "RESPONSE_STREAM" || render(p["TargetFunctionArn"]) != "${"+stream+".Arn}" {
					t.Errorf("function URL %v, want %s, RESPONSE_STREAM, on %s", p, v.auth, stream)
				}
			}
			public := 0
			for _, perm := range resourcesOf(v.tmpl, "AWS::Lambda::Permission") {
				p := props(perm)
				if p["Action"] == "lambda:InvokeFunctionUrl" {
					if p["Principal"] != "*" || p["FunctionUrlAuthType"] != "NONE" || render(p["FunctionName"]) != "${"+stream+".Arn}" {
						t.Errorf("function URL permission %v", p)
					}
					public++
				}
			}
			if want := map[string]int{"AWS_IAM": 0, "NONE": 1}[v.auth]; public != want {
				t.Errorf("%d public invoke permissions on the URL, want %d", public, want)
			}
			vars := props(resourcesOf(v.tmpl, "AWS::Lambda::Function")[stream])["Environment"].(map[string]any)["Variables"].(map[string]any)
			iss, aud := vars[EnvJWTIssuer], vars[EnvJWTAudience]
			switch v.auth {
			case "NONE":
				if iss != "https://issuer.example.com/" || aud != "archmax-api" {
					t.Errorf("the stream function verifies %v / %v, want the stack's issuer and audience", iss, aud)
				}
			default:
				if iss != nil || aud != nil {
					t.Errorf("an IAM stack's stream function has JWT settings %v %v", iss, aud)
				}
			}
			out, _ := v.tmpl["Outputs"].(map[string]any)["StreamUrl"].(map[string]any)
			if got := render(out["Value"]); got != "${"+urlID+".FunctionUrl}" {
				t.Errorf("StreamUrl output %s, want the URL's", got)
			}
			if timeout := props(resourcesOf(v.tmpl, "AWS::Lambda::Function")[stream])["Timeout"]; timeout != 900.0 {
				t.Errorf("stream timeout %v, want 900 (a function URL streams up to 15 minutes)", timeout)
			}
		})
	}
}
