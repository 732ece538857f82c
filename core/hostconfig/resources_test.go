package hostconfig

import (
	"reflect"
	"testing"
)

// What a deployment must grant and reach, read off the file (for the stack at synth time).
func TestResourcesAndToolNames(t *testing.T) {
	cfg, err := Load([]byte(fullFile(t)))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ToolNames(); !reflect.DeepEqual(got, []string{"get_order", "fetch_invoice", "crm_search_customers", "crm_get_customer", "crm_export_customer"}) {
		t.Errorf("ToolNames = %v", got)
	}
	want := Resources{
		Functions: []LambdaTool{{Function: "arn:aws:lambda:eu-west-1:123456789012:function:orders-get", Qualifier: "live"}},
		Secrets:   []string{"billing/api-token"},
		SigV4:     []SignedEndpoint{{Service: "bedrock-agentcore", Region: "eu-west-1", URL: "https://crm-gateway.gateway.bedrock-agentcore.eu-west-1.amazonaws.com/mcp"}},
		Endpoints: []string{"https://billing.example.com", "https://crm-gateway.gateway.bedrock-agentcore.eu-west-1.amazonaws.com"},
		Buckets:   []BucketAccess{{Bucket: "acme-contracts", Key: "current/", ReadOnly: true}, {Bucket: "acme-contracts", Key: "terms.md", ReadOnly: true}},
	}
	if got := cfg.Resources(); !reflect.DeepEqual(got, want) {
		t.Errorf("Resources =\n%+v\nwant\n%+v", got, want)
	}
	// a SigV4-signed http tool carries its method (the stack grants execute-api on the route)
	signed, err := Load([]byte(`tools:
  - name: add_note
    description: Adds a note.
    input: { type: object, properties: { id: { type: string } }, required: [id] }
    http: { method: POST, url: "https://a1b2c3.execute-api.eu-west-1.amazonaws.com/prod/orders/{id}/notes", auth: { sigv4: { service: execute-api } } }
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := signed.Resources().SigV4; !reflect.DeepEqual(got, []SignedEndpoint{{Service: "execute-api", URL: "https://a1b2c3.execute-api.eu-west-1.amazonaws.com/prod/orders/{id}/notes", Method: "POST"}}) {
		t.Errorf("SigV4 = %+v", got)
	}
	var none *Config
	if none.ToolNames() != nil || !reflect.DeepEqual(none.Resources(), Resources{}) || none.Rules() != nil {
		t.Error("a nil config names nothing")
	}
}

// Digest names a host file's bytes as the stack passes them to the functions.
func TestDigest(t *testing.T) {
	if got := Digest(nil); got != NoFile {
		t.Errorf("Digest(nil) = %q", got)
	}
	if got := Digest([]byte{}); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("Digest(empty file) = %q", got)
	}
	if got := Digest([]byte("version: 1\n")); len(got) != 64 || got == Digest([]byte("version: 1")) {
		t.Errorf("Digest = %q", got)
	}
}
