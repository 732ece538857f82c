// Package schematest holds the test helpers the editor-schema drift tests of core/spec and
// core/cases share: compiling a JSON Schema file and reading YAML as an editor does.
package schematest

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// Compile compiles the draft 2020-12 schema in file and also returns it decoded as plain
// JSON (for walking its declared properties).
func Compile(t *testing.T, file string) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s is not JSON: %v", file, err)
	}
	name := filepath.Base(file)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertVocabs()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(name)
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	var plain map[string]any
	if err := json.Unmarshal(raw, &plain); err != nil {
		t.Fatal(err)
	}
	return sch, plain
}

// Instance reads YAML as an editor does (YAML 1.2: yes/no/on/off and unquoted dates stay
// strings; aliases and merge keys applied) and returns the JSON instance a schema validates.
func Instance(t *testing.T, src string) any {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatalf("YAML: %v\n%s", err, src)
	}
	var keepTimestamps func(n *yaml.Node)
	keepTimestamps = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" {
			n.Tag = "!!str"
		}
		for _, c := range n.Content {
			keepTimestamps(c)
		}
	}
	keepTimestamps(&n)
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatalf("YAML: %v\n%s", err, src)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("JSON: %v\n%s", err, src)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// Pointer resolves a JSON pointer ("/$defs/state/properties") in a decoded schema, failing
// the test when a segment is missing.
func Pointer(t *testing.T, root map[string]any, ptr string) any {
	t.Helper()
	var cur any = root
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				t.Fatalf("%s: no %q", ptr, seg)
			}
			cur = c[i]
		default:
			t.Fatalf("%s: no %q", ptr, seg)
		}
		if cur == nil {
			t.Fatalf("%s: no %q in the schema", ptr, seg)
		}
	}
	return cur
}

// Keys are the sorted property names of the properties object at ptr.
func Keys(t *testing.T, root map[string]any, ptr string) []string {
	t.Helper()
	props, ok := Pointer(t, root, ptr).(map[string]any)
	if !ok {
		t.Fatalf("%s is not a properties object", ptr)
	}
	return slices.Sorted(maps.Keys(props))
}
