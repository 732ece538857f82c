package spec

import (
	"strings"
	"testing"
)

// unknownKeyFinding is the finding ValidateSpec reports for the unknown key in src: a
// schema.unknown-key (V-01), signature.unknown-key or trigger.unknown-key
// whose message names key.
func unknownKeyFinding(t *testing.T, src, key string) Diagnostic {
	t.Helper()
	d, ok := findUnknownKey(src, key)
	if !ok {
		t.Fatalf("no unknown-key finding names %q:\n%s", key, src)
	}
	return d
}

func findUnknownKey(src, key string) (Diagnostic, bool) {
	for _, d := range ValidateSpec("workflow.yaml", []byte(src)).Diagnostics {
		if strings.HasSuffix(d.Code, ".unknown-key") && (strings.Contains(d.Message, `"`+key+`"`) || strings.Contains(d.Message, "'"+key+"'")) {
			return d, true
		}
	}
	return Diagnostic{}, false
}

// V-01, R-06, R-08: an unknown key gets a "did you mean" hint when exactly one key taken at
// that position is close to it — a case-only difference, or a few edits (one for a key of 3
// or 4 characters, two from 5) — and the family's hint otherwise.
func TestUnknownKeySuggestsTheCloseKey(t *testing.T) {
	for _, tc := range []struct {
		name, src, key, want string
	}{
		{"V-01 state key misspelt", strings.Replace(minimal, "  done:\n", "  done:\n    instuctions: Finish.\n", 1), "instuctions", "instructions"},
		{"V-01 state key with a capital", strings.Replace(minimal, "  done:\n", "  done:\n    Instructions: Finish.\n", 1), "Instructions", "instructions"},
		{"V-01 case-only, however long", "settings: { TIMEOUTMS: 10 }\n" + minimal, "TIMEOUTMS", "timeoutMs"},
		{"V-01 two edits on a long key", strings.Replace(minimal, "description: Finished.", "descripton: Finished.\n        description: Finished.", 1), "descripton", "description"},
		{"V-01 root key", "State: {}\n" + minimal, "State", "states"},
		{"V-01 one edit on a short key", strings.Replace(minimal, "  done:\n", "  done:\n    tpye: agent\n", 1), "tpye", "type"},
		{"R-06 signature entry key", strings.Replace(minimal, "      manual:\n", "      manual: { requires: [{ name: x, descripion: The x. }] }\n", 1), "descripion", "description"},
		{"R-08 trigger declaration key", strings.Replace(minimal, "      manual:\n", "      manual: { sesion: conv }\n", 1), "sesion", "session"},
		{"V-01 far from every key", strings.Replace(minimal, "  done:\n", "  done:\n    colour: red\n", 1), "colour", ""},
		{"V-01 close to two keys (title, states)", "tites: x\n" + minimal, "tites", ""},
		{"V-01 two edits on a two-letter key is a different word", strings.Replace(minimal, "description: Finished.", "description: Finished.\n        id: x", 1), "id", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := unknownKeyFinding(t, tc.src, tc.key)
			switch {
			case tc.want != "" && d.Hint != "did you mean '"+tc.want+"'?":
				t.Errorf("hint %q, want it to suggest %q", d.Hint, tc.want)
			case tc.want == "" && (strings.Contains(d.Hint, "did you mean") || d.Hint != HintFor(d.Code)):
				t.Errorf("hint %q, want the family's %q", d.Hint, HintFor(d.Code))
			}
		})
	}
}

// V-01: every key the editor schema declares, at every level, is one the parser suggests
// there — an upper-cased spelling of it gets it as the hint — so the suggestions cannot
// drift from the keys the parser takes.
func TestUnknownKeySuggestionsCoverEveryKey(t *testing.T) {
	_, plain := workflowSchema(t)
	for _, s := range slots() {
		props := pointer(t, plain, s.ptr).(map[string]any)
		for _, key := range propertyNames(t, plain, s.ptr) {
			if refused(props[key]) {
				continue
			}
			upper := strings.ToUpper(key)
			d, ok := findUnknownKey(s.doc(upper+": x"), upper)
			for other, sample := range s.samples { // a mapping that needs another key to be read as one (a mount grant)
				if !ok && other != key {
					d, ok = findUnknownKey(s.doc(sample+", "+upper+": x"), upper)
				}
			}
			if !ok {
				t.Errorf("%s: no unknown-key finding for %q", s.ptr, upper)
				continue
			}
			if d.Hint != "did you mean '"+key+"'?" {
				t.Errorf("%s: %q got the hint %q", s.ptr, upper, d.Hint)
			}
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"type", "type", 0},
		{"instuctions", "instructions", 1}, {"descripton", "description", 1}, {"descrpiton", "description", 2},
		{"tpye", "type", 1}, {"ot", "to", 1}, {"id", "to", 2}, {"kitten", "sitting", 3}, {"café", "cafe", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
