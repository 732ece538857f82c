package spec

import "testing"

// Spec 01 §4.2 messages; every error reports its reference name.
func TestErrorMessagesAndNames(t *testing.T) {
	tests := []struct {
		err interface {
			error
			Name() string
		}
		name, msg string
	}{
		{&UnknownTriggerError{TriggerID: "email", Available: []string{"manual", "timer"}}, "UnknownTriggerError",
			"No start state for trigger 'email'. Declared triggers: manual, timer."},
		{&UnknownTriggerError{TriggerID: "manual"}, "UnknownTriggerError",
			"No start state for trigger 'manual'. The workflow declares no start-state triggers."},
		{&InvalidVariableNameError{Variable: "X"}, "InvalidVariableNameError",
			"'X' is not a valid variable name (seeded). Use lowercase letters, digits and underscores, starting with a letter (e.g. 'from_email')."},
		{&SessionStoreIdError{ID: "a\u2028<b>", Reason: "r"}, "SessionStoreIdError", "Invalid session id \"a\u2028<b>\": r."},
		{&InvalidTitleError{Detail: "d"}, "InvalidTitleError", "d (seeded)"},
		{&InvalidSessionPathError{Path: "", Reason: "it is empty."}, "InvalidSessionPathError",
			"the caller-supplied path '' is not a usable session path: it is empty."},
	}
	for _, tt := range tests {
		if tt.err.Name() != tt.name || tt.err.Error() != tt.msg {
			t.Errorf("%s: %q\nwant %s: %q", tt.err.Name(), tt.err.Error(), tt.name, tt.msg)
		}
	}
}
