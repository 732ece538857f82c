package pricing

import (
	"bytes"
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// tables holds the ready-made tables, one YAML file per table named <name>.yaml (DECISIONS
// CO22-8). They are compiled into the binary and never applied unless a host file includes
// one (`pricing: { include: <name> }`).
//
//go:embed tables/*.yaml
var tables embed.FS

// IncludedTable is a ready-made table as its file states it: Name (what `include` names),
// the Region and Date its rates were read for, the Sources they were read from, the Prices
// in USD per 1M tokens (keys as in a host file's pricing section), and the models left out
// because no rate could be confirmed.
type IncludedTable struct {
	Name        string        `yaml:"name"`
	Region      string        `yaml:"region"`
	Date        string        `yaml:"date"`
	Currency    string        `yaml:"currency"`
	Unit        string        `yaml:"unit"`
	Sources     []string      `yaml:"sources"`
	Prices      Table         `yaml:"prices"`
	NotIncluded []NotIncluded `yaml:"notIncluded"`
}

// NotIncluded is a model a ready-made table does not price, and why.
type NotIncluded struct {
	Model  string `yaml:"model"`
	Reason string `yaml:"reason"`
}

// UnknownTableError is an `include` naming no ready-made table; Available lists those
// there are.
type UnknownTableError struct {
	Name      string
	Available []string
}

func (e *UnknownTableError) Error() string {
	return fmt.Sprintf("no ready-made pricing table %q (available: %s)", e.Name, strings.Join(e.Available, ", "))
}

// IncludedNames are the names of the ready-made tables, sorted.
func IncludedNames() []string {
	entries, err := tables.ReadDir("tables")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Included is the ready-made table name: *UnknownTableError when there is none; an error
// when its file does not parse (unknown keys refused), names another table, has no region
// or date, or has an entry without positive input and output rates (or a negative cache
// rate) — the package tests hold every shipped file to that.
func Included(name string) (*IncludedTable, error) {
	if !slices.Contains(IncludedNames(), name) {
		return nil, &UnknownTableError{Name: name, Available: IncludedNames()}
	}
	src, err := tables.ReadFile(path.Join("tables", name+".yaml"))
	if err != nil {
		return nil, err
	}
	return parseIncluded(name, src)
}

// parseIncluded reads and checks the file of the ready-made table name.
func parseIncluded(name string, src []byte) (*IncludedTable, error) {
	var t IncludedTable
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("pricing table %s: %w", name, err)
	}
	switch {
	case t.Name != name:
		return nil, fmt.Errorf("pricing table %s: the file names itself %q", name, t.Name)
	case t.Region == "" || t.Date == "" || len(t.Sources) == 0:
		return nil, fmt.Errorf("pricing table %s: region, date and sources are required", name)
	case len(t.Prices) == 0:
		return nil, fmt.Errorf("pricing table %s: no prices", name)
	}
	for k, p := range t.Prices {
		positive := func(r *float64) bool { return r != nil && *r > 0 }
		negative := func(r *float64) bool { return r != nil && *r < 0 }
		if k == "" || k == DefaultKey || !positive(p.Input) || !positive(p.Output) || negative(p.CacheRead) || negative(p.CacheWrite) || negative(p.CacheWrite1h) {
			return nil, fmt.Errorf("pricing table %s: entry %q needs a model key and positive input and output rates", name, k)
		}
	}
	return &t, nil
}

// Merge is the table a pricing section that includes base and names its own entries
// prices with: base's entries, then own's over them (DECISIONS CO22-9). An own entry
// replaces base's entry of the same key, and every base entry whose key contains an own
// key is left out — every model id that entry matches, the own key matches too, so the own
// entry prices it rather than the longer key of the ready-made table. Neither table is
// changed.
func Merge(base, own Table) Table {
	out := Table{}
	for k, p := range base {
		shadowed := false
		for o := range own {
			if o != DefaultKey && o != "" && strings.Contains(k, o) {
				shadowed = true
				break
			}
		}
		if !shadowed {
			out[k] = p
		}
	}
	for k, p := range own {
		out[k] = p
	}
	return out
}
