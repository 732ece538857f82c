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
	var none *Config
	if none.ToolNames() != nil || !reflect.DeepEqual(none.Resources(), Resources{}) || none.Rules() != nil {
		t.Error("a nil config names nothing")
	}
}
