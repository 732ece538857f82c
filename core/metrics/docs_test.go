package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The metrics table of docs/operations.md lists exactly the metrics of Catalog, each with
// its unit, so the two cannot drift.
func TestDocsListTheCatalog(t *testing.T) {
	src, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(src), "\n## Metrics\n")
	if !ok {
		t.Fatal("docs/operations.md has no '## Metrics' section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\| ([A-Za-z]+) \\|")
	documented := map[string]Unit{}
	for _, m := range row.FindAllStringSubmatch(sec, -1) {
		if _, dup := documented[m[1]]; dup {
			t.Errorf("%s is listed twice", m[1])
		}
		documented[m[1]] = Unit(m[2])
	}
	for n, u := range Catalog {
		d, ok := documented[n]
		if !ok {
			t.Errorf("metric %s is not in the docs' table", n)
			continue
		}
		if d != u {
			t.Errorf("metric %s: the docs say %s, the code %s", n, d, u)
		}
	}
	for n := range documented {
		if _, ok := Catalog[n]; !ok {
			t.Errorf("the docs list %s, which no code emits", n)
		}
	}
}
