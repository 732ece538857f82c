package pricing

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Every shipped table parses, states its region, date and sources, and prices each entry
// with positive input and output rates.
func TestIncludedTablesParse(t *testing.T) {
	names := IncludedNames()
	if !slices.Contains(names, "bedrock-2026-12") {
		t.Fatalf("tables %v, want bedrock-2026-12 among them", names)
	}
	for _, name := range names {
		tab, err := Included(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tab.Region != "us-east-1" || tab.Date == "" || tab.Currency != "USD" || len(tab.Sources) == 0 || len(tab.NotIncluded) == 0 {
			t.Errorf("%s: region %q date %q currency %q, %d sources, %d left out", name, tab.Region, tab.Date, tab.Currency, len(tab.Sources), len(tab.NotIncluded))
		}
		for k, p := range tab.Prices {
			if p.Input == nil || *p.Input <= 0 || p.Output == nil || *p.Output <= 0 {
				t.Errorf("%s: %s has no positive input and output rates: %+v", name, k, p)
			}
		}
	}
}

// The ready-made table prices the ids Bedrock uses: the in-Region id and the us. profile at
// the regional rate, the global. profile at the base rate, by a part of the id.
func TestIncludedResolves(t *testing.T) {
	tab, err := Included("bedrock-2026-12")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][2]float64{
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0": {3, 15},
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0":     {3.3, 16.5},
		"anthropic.claude-haiku-4-5-20251001-v1:0":         {1.1, 5.5},
		"global.anthropic.claude-opus-4-5-20251101-v1:0":   {5, 25},
		"us.anthropic.claude-opus-4-1-20250805-v1:0":       {15, 75},
		"amazon.nova-lite-v1:0":                            {0.06, 0.24},
		"us.amazon.nova-pro-v1:0":                          {0.8, 3.2},
	} {
		p, ok := tab.Prices.Resolve(id)
		if !ok || *p.Input != want[0] || *p.Output != want[1] {
			t.Errorf("%s: %+v %v, want input %v output %v", id, p, ok, want[0], want[1])
		}
	}
	if c, ok := tab.Prices.Cost("global.anthropic.claude-sonnet-4-5-20250929-v1:0", Usage{Input: 2000, Output: 100, CacheRead: 1000}); !ok || c != 0.0048 {
		t.Errorf("a Sonnet 4.5 call costs %v %v, want 0.0048 (1000 fresh at 3, 1000 cached at 0.3, 100 out at 15)", c, ok)
	}
	// Anthropic's cache writes: 1.25× the input rate for 5 minutes, 2× for an hour, on every entry
	for k, p := range tab.Prices {
		if !strings.Contains(k, "anthropic.") {
			continue
		}
		if p.CacheWrite == nil || Round(*p.CacheWrite) != Round(*p.Input*1.25) || p.CacheWrite1h == nil || Round(*p.CacheWrite1h) != Round(*p.Input*2) {
			t.Errorf("%s: cache writes %v / %v for input %v, want 1.25× and 2×", k, p.CacheWrite, p.CacheWrite1h, *p.Input)
		}
	}
	if c, ok := tab.Prices.Cost("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Usage{Input: 1000, CacheWrite: 1000, CacheTTL: CacheTTL1h}); !ok || c != 0.0066 {
		t.Errorf("a 1-hour cache write on Sonnet 4.5 (us.) costs %v %v, want 0.0066", c, ok)
	}
	for _, id := range []string{"amazon.nova-premier-v1:0", "meta.llama3-3-70b-instruct-v1:0", "anthropic.claude-opus-4-7", "mistral.mistral-large-2407-v1:0"} {
		if p, ok := tab.Prices.Resolve(id); ok {
			t.Errorf("%s is priced %+v: a model the table leaves out must report tokens only", id, p)
		}
	}
}

func TestIncludedUnknown(t *testing.T) {
	_, err := Included("bedrock-2020-01")
	var unknown *UnknownTableError
	if !errors.As(err, &unknown) || !slices.Equal(unknown.Available, IncludedNames()) || !strings.Contains(err.Error(), "bedrock-2026-12") {
		t.Fatalf("unknown table: %v", err)
	}
}

// A table file that does not hold to the shape is refused: it would price a guess.
func TestParseIncludedRefuses(t *testing.T) {
	head := "name: t\nregion: us-east-1\ndate: '2026-12-02'\nsources: [s]\n"
	for what, src := range map[string]string{
		"unknown key":        head + "prices: { m: { input: 1, output: 2, cached: 1 } }\n",
		"zero output":        head + "prices: { m: { input: 1, output: 0 } }\n",
		"no input":           head + "prices: { m: { output: 2 } }\n",
		"negative cache":     head + "prices: { m: { input: 1, output: 2, cacheRead: -1 } }\n",
		"a default entry":    head + "prices: { default: { input: 1, output: 2 } }\n",
		"no prices":          head,
		"no region":          "name: t\ndate: '2026-12-02'\nsources: [s]\nprices: { m: { input: 1, output: 2 } }\n",
		"another name":       strings.Replace(head, "name: t", "name: u", 1) + "prices: { m: { input: 1, output: 2 } }\n",
		"not a table at all": "- 1\n",
	} {
		if _, err := parseIncluded("t", []byte(src)); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	if _, err := parseIncluded("t", []byte(head+"prices: { m: { input: 1, output: 2, cacheRead: 0.1 } }\n")); err != nil {
		t.Errorf("a well-formed table: %v", err)
	}
}

func TestMerge(t *testing.T) {
	base := Table{
		"anthropic.claude-sonnet-4-5-20250929":        {Input: f(3.3), Output: f(16.5)},
		"global.anthropic.claude-sonnet-4-5-20250929": {Input: f(3), Output: f(15)},
		"amazon.nova-lite-v1":                         {Input: f(0.06), Output: f(0.24)},
	}
	own := Table{"claude-sonnet": {Input: f(2), Output: f(10)}, "amazon.nova-lite-v1": {Input: f(0.05), Output: f(0.2)}, DefaultKey: {Input: f(9)}}
	m := Merge(base, own)
	for id, want := range map[string]float64{
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0": 2,    // the own shorter key wins over the table's longer ones
		"amazon.nova-lite-v1:0":                            0.05, // the same key: replaced
		"amazon.nova-pro-v1:0":                             9,    // neither: the own default
	} {
		if p, ok := m.Resolve(id); !ok || *p.Input != want {
			t.Errorf("%s: %+v %v, want input %v", id, p, ok, want)
		}
	}
	if len(base) != 3 || *base["amazon.nova-lite-v1"].Input != 0.06 {
		t.Error("Merge changed the base table")
	}
	// an own default does not shadow the table's entries
	m = Merge(base, Table{DefaultKey: {Input: f(9)}})
	if p, _ := m.Resolve("amazon.nova-lite-v1:0"); *p.Input != 0.06 {
		t.Errorf("an own default shadowed a table entry: %+v", p)
	}
}
