package session

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Issue 4: every tool the runtime can offer is a valid Bedrock tool spec — a name matching
// [a-zA-Z0-9_-]{1,64}, a non-empty description, and an input schema that compiles as JSON
// Schema with top-level type object.
func TestEveryToolSpecIsValid(t *testing.T) {
	e := &Engine{}
	for name := range implemented {
		desc, schema := e.toolSpec(name)
		if !toolNamePattern.MatchString(name) || desc == "" || schema == nil {
			t.Errorf("%s: name/description/schema missing", name)
			continue
		}
		var top struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(schema, &top); err != nil || top.Type != "object" {
			t.Errorf("%s: top-level type %q (%v)", name, top.Type, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("tool.json", doc); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := c.Compile("tool.json"); err != nil {
			t.Errorf("%s: schema does not compile: %v", name, err)
		}
	}
}
