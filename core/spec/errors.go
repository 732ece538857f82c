package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// InvalidVariableNameError refuses a variable name outside the variable grammar
// (spec 01 §5.1; 02 §1.4 item 4, §4.3). Variable is the refused name (the field is not
// called Name because Name() reports the error's reference name); Source says where
// the name came from ("seeded" when blank), e.g. "delivered to session 'chat-42'".
type InvalidVariableNameError struct {
	Variable string
	Source   string
}

// Name is the reference error name, "InvalidVariableNameError".
func (e *InvalidVariableNameError) Name() string { return "InvalidVariableNameError" }

func (e *InvalidVariableNameError) Error() string {
	return fmt.Sprintf("'%s' is not a valid variable name (%s). Use lowercase letters, digits and underscores, starting with a letter (e.g. 'from_email').",
		e.Variable, defaultSource(e.Source))
}

// SessionStoreIdError refuses a session id that cannot own a session folder
// (spec 01 §6.3, 02 §9.2). ID is the id as given; Reason is SessionIDRejection's text.
// Message: `Invalid session id "<id>": <reason>.` with the id JSON-quoted.
type SessionStoreIdError struct {
	ID     string
	Reason string
}

// Name is the reference error name, "SessionStoreIdError".
func (e *SessionStoreIdError) Name() string { return "SessionStoreIdError" }

func (e *SessionStoreIdError) Error() string {
	return fmt.Sprintf("Invalid session id %s: %s.", jsonQuote(e.ID), e.Reason)
}

// UnknownTriggerError is resolveTrigger's fail-closed answer for a trigger id no state
// declares (spec 01 §4.2). Available lists the declared ids in declaration order.
type UnknownTriggerError struct {
	TriggerID string
	Available []string
}

// Name is the reference error name, "UnknownTriggerError".
func (e *UnknownTriggerError) Name() string { return "UnknownTriggerError" }

func (e *UnknownTriggerError) Error() string {
	if len(e.Available) == 0 {
		return fmt.Sprintf("No start state for trigger '%s'. The workflow declares no start-state triggers.", e.TriggerID)
	}
	return fmt.Sprintf("No start state for trigger '%s'. Declared triggers: %s.", e.TriggerID, strings.Join(e.Available, ", "))
}

// InvalidTitleError refuses a host-seeded title (spec 01 §5.3): Detail is
// TitleWriteError's text, Source where the value came from ("seeded" when blank).
// Message: `<detail> (<source>)`.
type InvalidTitleError struct {
	Detail string
	Source string
}

// Name is the reference error name, "InvalidTitleError".
func (e *InvalidTitleError) Name() string { return "InvalidTitleError" }

func (e *InvalidTitleError) Error() string {
	return fmt.Sprintf("%s (%s)", e.Detail, defaultSource(e.Source))
}

// InvalidSessionPathError refuses a session path outside the §4.9 grammar (spec 01
// §4.9, 02 §4.5). Path is the path as given; Reason is one of the grammar's reason
// texts ("it is empty.", …). The message is the caller-supplied-path wording; a
// workflow.yaml diagnostic words its own message around Reason.
type InvalidSessionPathError struct {
	Path   string
	Reason string
}

// Name is the reference error name, "InvalidSessionPathError".
func (e *InvalidSessionPathError) Name() string { return "InvalidSessionPathError" }

func (e *InvalidSessionPathError) Error() string {
	return fmt.Sprintf("the caller-supplied path '%s' is not a usable session path: %s", e.Path, e.Reason)
}

func defaultSource(source string) string {
	if source == "" {
		return "seeded"
	}
	return source
}

// jsonQuote renders s as JavaScript's JSON.stringify does: no HTML escaping, and
// U+2028/U+2029 left as they are.
func jsonQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	out := strings.TrimSuffix(b.String(), "\n")
	return strings.NewReplacer(`\u2028`, "\u2028", `\u2029`, "\u2029").Replace(out)
}
