package spec

import (
	"errors"
	"strings"
	"testing"
)

// Spec 01 §5.3 titleWriteError.
func TestTitleWriteError(t *testing.T) {
	const shape = "'title' is reserved for a short label naming the task this run is doing. It must be a non-empty single-line string of at most 200 characters"
	astral199 := strings.Repeat("a", 199) + "😀" // 201 UTF-16 units, 200 runes
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"ok", "Refund order 42", ""},
		{"padded", "  Refund  ", ""},
		{"exactly 200", strings.Repeat("x", 200), ""},
		{"200 after trim", "  " + strings.Repeat("x", 200) + "\t", ""},
		{"astral within", strings.Repeat("😀", 100), ""},
		{"number", 4.0, shape + ", but a number was given."},
		{"null", nil, shape + ", but a null was given."},
		{"bool", true, shape + ", but a boolean was given."},
		{"object", map[string]any{}, shape + ", but a object was given."},
		{"array", []any{}, shape + ", but a object was given."},
		{"newline", "line one\nline two", shape + "; this one spans more than one line."},
		{"trailing newline", "title\n", shape + "; this one spans more than one line."},
		{"carriage return", "a\rb", shape + "; this one spans more than one line."},
		{"empty", "", shape + "; this one is empty."},
		{"blank", " \t\u00a0\ufeff", shape + "; this one is empty."},
		{"201", strings.Repeat("x", 201), shape + "; this one is 201. Shorten it and retry."},
		{"astral 201", astral199, shape + "; this one is 201. Shorten it and retry."},
	}
	for _, tt := range tests {
		if got := TitleWriteError(tt.v); got != tt.want {
			t.Errorf("%s\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	if got := NormalizeTitle("\u3000 Refund order 42 \ufeff"); got != "Refund order 42" {
		t.Errorf("NormalizeTitle = %q", got)
	}
}

func TestInvalidTitleError(t *testing.T) {
	var err error = &InvalidTitleError{Detail: TitleWriteError("")}
	var typed *InvalidTitleError
	if !errors.As(err, &typed) || !strings.HasSuffix(err.Error(), "; this one is empty. (seeded)") {
		t.Errorf("InvalidTitleError = %q", err)
	}
	if got := (&InvalidTitleError{Detail: "d", Source: "delivered"}).Error(); got != "d (delivered)" {
		t.Errorf("with source: %q", got)
	}
}

func TestVariableValues(t *testing.T) {
	store := map[string]VariableEntry{"trigger": {Value: "manual", Locked: true}, "title": {Value: "T"}}
	got := VariableValues(store)
	if len(got) != 2 || got["trigger"] != "manual" || got["title"] != "T" {
		t.Errorf("VariableValues = %#v", got)
	}
}
