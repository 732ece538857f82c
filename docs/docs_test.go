// Package docs_test holds the documentation to the code: the authoring guide (docs/authoring/)
// names every key of the three editor schemas and every built-in tool and control; every relative
// link of the user docs resolves, anchors included; and no user-facing text — the user docs, the
// schemas' descriptions, the bundled skill, and the Go string literals of the CLI, the validation
// hints and the runtime's message files — points at a document the repository does not ship or
// at an issue number.
package docs_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/spec"
)

// root is the repository root, from this package's directory.
const root = ".."

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// guideText is every page of docs/authoring/, concatenated.
func guideText(t *testing.T) string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs/authoring/*.md"))
	if err != nil || len(pages) < 8 {
		t.Fatalf("docs/authoring/ holds %d pages (%v)", len(pages), err)
	}
	var b strings.Builder
	for _, p := range pages {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	return b.String()
}

// mentions reports whether the guide names key as authors write it: in a code span or block
// (`key`, `key: …`, `{ key, …`) or as a YAML key (key:) — a whole word either way.
func mentions(text, key string) bool {
	re := regexp.MustCompile("([`.]" + regexp.QuoteMeta(key) + "[`:\\s(\\[.]|[\\s{,(\\[\"-]" + regexp.QuoteMeta(key) + ":|[{,] " + regexp.QuoteMeta(key) + "[ ,}?])")
	return re.MatchString(text)
}

// schemaKeys collects every property name a JSON Schema declares, at any depth.
func schemaKeys(node any, into map[string]bool) {
	switch n := node.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok {
			for k := range props {
				into[k] = true
			}
		}
		for _, v := range n {
			schemaKeys(v, into)
		}
	case []any:
		for _, v := range n {
			schemaKeys(v, into)
		}
	}
}

func TestGuideNamesEverySchemaKey(t *testing.T) {
	text := guideText(t)
	for _, name := range []string{"workflow", "case", "host"} {
		var doc any
		if err := json.Unmarshal([]byte(read(t, "docs/schema/"+name+".schema.json")), &doc); err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		schemaKeys(doc, keys)
		if len(keys) < 30 {
			t.Fatalf("%s schema: only %d keys found", name, len(keys))
		}
		for _, k := range slices.Sorted(mapKeys(keys)) {
			if !mentions(text, k) {
				t.Errorf("docs/authoring/ never names the %s schema's key %q", name, k)
			}
		}
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestGuideNamesEveryToolAndControl(t *testing.T) {
	text := guideText(t)
	var names []string
	names = append(names, spec.EssentialTools...)
	names = append(names, spec.HarnessControlTools...)
	names = append(names, spec.AutomatedExcludedTools...)
	names = append(names, spec.UngrantableTools...)
	for tool := range spec.BuiltInToolPaths {
		names = append(names, tool)
	}
	names = append(names, spec.WorkflowToolPrefix+"<slug>")
	for _, k := range cases.ActionKinds {
		names = append(names, string(k))
	}
	for _, k := range cases.AssertionKinds {
		names = append(names, string(k))
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		if !strings.Contains(text, "`"+n+"`") && !strings.Contains(text, "`"+n+"(") {
			t.Errorf("docs/authoring/ never names %q in a code span", n)
		}
	}
	// each built-in tool's arguments are in the scripts page's table
	scripts := read(t, "docs/authoring/scripts.md")
	for tool, args := range spec.BuiltInToolPaths {
		for _, a := range args {
			if !strings.Contains(scripts, tool+"."+a.Arg) && !strings.Contains(scripts, "`"+tool+"` | `{ "+a.Arg) {
				t.Errorf("scripts.md does not say that %s's %s is a governed path (%s)", tool, a.Arg, a.Access)
			}
		}
	}
}

// userDocs are the Markdown files a user reads: the README, docs/ but the engineering notes,
// the authoring guide, and the bundled skill.
func userDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "infra/README.md"}
	for _, pattern := range []string{"docs/*.md", "docs/authoring/*.md", "local/skill/archmax-harness/*.md", "local/skill/archmax-harness/references/*.md", "local/skill/scaffold/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, filepath.ToSlash(rel))
		}
	}
	return files
}

// engineering notes may cite rule ids, issue numbers and the spec: they are the project's
// memory, not a user's manual.
var engineeringNotes = []string{"docs/DECISIONS.md", "docs/ARCHITECTURE.md", "docs/PERFORMANCE.md"}

var (
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingRe = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	fenceRe   = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	codeRe    = regexp.MustCompile("`[^`\n]*`")
)

// prose is a Markdown text without its code blocks and code spans (links there are examples).
func prose(md string) string {
	return codeRe.ReplaceAllString(fenceRe.ReplaceAllString(md, ""), "")
}

// anchors are the GitHub ids of a Markdown file's headings: lower case, punctuation other
// than '-' and '_' dropped, spaces as '-', a repeat suffixed -1, -2, ….
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRe.FindAllStringSubmatch(fenceRe.ReplaceAllString(md, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			out[id+"-"+strconv.Itoa(n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

// checkLink resolves target, a link written in the file from, relative to the repository root.
func checkLink(t *testing.T, from, target string) {
	t.Helper()
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := from
	if path != "" {
		file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), path)))
	}
	st, err := os.Stat(filepath.Join(root, file))
	if err != nil {
		t.Errorf("%s: link %q: %s does not exist", from, target, file)
		return
	}
	if anchor == "" {
		return
	}
	if st.IsDir() || !strings.HasSuffix(file, ".md") {
		t.Errorf("%s: link %q: an anchor into %s, which is not a Markdown file", from, target, file)
		return
	}
	if !anchors(read(t, file))[anchor] {
		t.Errorf("%s: link %q: %s has no heading #%s", from, target, file, anchor)
	}
}

func TestEveryRelativeLinkResolves(t *testing.T) {
	files := userDocs(t)
	files = append(files, engineeringNotes...)
	n := 0
	for _, f := range files {
		for _, m := range linkRe.FindAllStringSubmatch(prose(read(t, f)), -1) {
			checkLink(t, f, m[1])
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d links checked", n)
	}
}

// Every section a validation hint names is a heading of the guide.
func TestHintsLinkToTheGuide(t *testing.T) {
	for _, ref := range spec.GuideRefs() {
		checkLink(t, "README.md", ref)
	}
	for _, family := range spec.HintFamilies() {
		h := spec.HintFor(family + ".x")
		if !strings.Contains(h, spec.GuidePath) {
			t.Errorf("the hint of the %q family names no section of the guide: %q", family, h)
		}
	}
}

// unshipped names what user-facing text must not point at: the design material the project
// was built from (its spec sections, research notes, design card) and issue numbers.
var unshipped = regexp.MustCompile(`spec 0[0-9]|research/|DESIGN\.md|DESIGN §|\.\./shared|[Ii]ssue [0-9]+|[Ii]ssue-[0-9]+`)

func TestUserDocsStandAlone(t *testing.T) {
	files := userDocs(t)
	schemas, _ := filepath.Glob(filepath.Join(root, "docs/schema/*.json"))
	for _, s := range schemas {
		rel, _ := filepath.Rel(root, s)
		files = append(files, filepath.ToSlash(rel))
	}
	for _, f := range files {
		if slices.Contains(engineeringNotes, f) {
			continue
		}
		for i, line := range strings.Split(read(t, f), "\n") {
			// a link into an engineering note may carry its heading's anchor
			line = regexp.MustCompile(`\((?:[./]*docs/|\.\./)?(?:DECISIONS|ARCHITECTURE|PERFORMANCE)\.md#[^)]*\)`).ReplaceAllString(line, "")
			if m := unshipped.FindString(line); m != "" {
				t.Errorf("%s:%d names %q: %s", f, i+1, m, strings.TrimSpace(line))
			}
		}
	}
}

// goStrings are the string literals of the Go files matched by patterns (tests left out).
func goStrings(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, pattern := range patterns {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, f)
			ast.Inspect(file, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], s)
					}
				}
				return true
			})
		}
	}
	return out
}

func TestUserFacingStringsStandAlone(t *testing.T) {
	lits := goStrings(t, "local/cmd/archmax/*.go", "core/validate/*.go", "core/spec/hints.go", "core/*/messages.go",
		"core/sandbox/errors.go", "core/spec/errors*.go")
	if len(lits) < 10 {
		t.Fatalf("only %d files scanned", len(lits))
	}
	for file, ss := range lits {
		for _, s := range ss {
			if m := unshipped.FindString(s); m != "" {
				t.Errorf("%s: a user-facing string names %q: %.160q", file, m, s)
			}
		}
	}
}
