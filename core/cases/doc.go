// Package cases is the declarative case format of spec 04 ("test spec version 1"): one
// YAML document per `*.test.yaml` / `*.test.yml` file describing one conversation on one
// session, as a flat list of actions (send, decide, deliver) and assertions checked
// against the view of the closest preceding action (CE-01…CE-06, §5–§8).
//
// This package holds the pure part of the case engine: the typed CaseDocument (§5, §6.1,
// §7.1, API-05, API-07), the fail-closed parser ParseCaseDocument that every reader
// shares — the runner, `archmax validate` and editors (CD-01b, API-03) — with its
// *CaseSchemaError (API-04), and the inverse SerializeCaseDocument (API-06). It does no
// I/O: fixtures named by `from:` are resolved by the runner through the authoring
// backend (CE-11, CD-43), never here.
//
// YAML is read with the YAML 1.2 core schema (yes/no/on/off and dates stay strings),
// duplicate keys are errors, aliases are expanded within a bound, merge keys (`<<`)
// apply as in workflow.yaml, and a file holds exactly one document (CD-03, CE-13,
// OQ-C18).
package cases
