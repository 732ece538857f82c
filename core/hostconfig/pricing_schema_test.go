package hostconfig

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/archmax-ai/archmax/core/pricing"
)

// The editor schema's include enum is the list of ready-made tables.
func TestPricingIncludeSchemaEnum(t *testing.T) {
	src, err := os.ReadFile(hostSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Pricing struct {
				Properties struct {
					Include struct {
						Enum []string `json:"enum"`
					} `json:"include"`
				} `json:"properties"`
			} `json:"pricing"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Properties.Pricing.Properties.Include.Enum; !slices.Equal(got, pricing.IncludedNames()) {
		t.Errorf("schema: pricing.include enum %v, want %v", got, pricing.IncludedNames())
	}
}
