// Package artifacts renders a session's observability files — graph.json, graph.mmd,
// trajectory.json, trail.json, variables.json and metadata.json — from what the session
// store holds of it (a Source). It is pure: the same Source always renders the same bytes,
// so the files are rendered when they are read (the session API, `archmax sessions
// --artifacts`) instead of written at each settle, and no write can fail or fall behind
// the session (docs/DECISIONS.md AR20-1).
//
// The files:
//
//	graph.json       the governing spec's derived topology (machine.GraphOf) and its Mermaid text
//	graph.mmd        the Mermaid text plus one trailing newline
//	trajectory.json  the transcript per state: messages and tool calls with their results
//	trail.json       {sessionId, workflow, steps}: the audit trail as stored
//	variables.json   {sessionId, workflow, variables: {name: {value, locked}}}; {} when the
//	                 session holds none, absent when its checkpoint could not be read
//	metadata.json    {sessionId, workflow, runtimeContract, packageVersion, specHash, usage?}
//
// graph.json and graph.mmd need the session's spec snapshot; trail.json and variables.json
// its checkpoint. A file whose input is missing is not rendered (Render leaves it out; One
// reports it absent) — empty and absent are different facts.
//
// The JSON files are indented to IndentDepth levels and compact below, so a file costs time
// and memory linear in what it holds, and none renders past a limit (MaxBytes for Render
// and One; RenderOne's caller's): the rendering stops there with a *TooLargeError
// (docs/DECISIONS.md AR20-14, AR20-15).
package artifacts

import (
	"errors"
	"runtime/debug"
	"slices"

	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// The artifact names.
const (
	GraphJSON    = "graph.json"
	GraphMermaid = "graph.mmd"
	Trajectory   = "trajectory.json"
	Trail        = "trail.json"
	Variables    = "variables.json"
	Metadata     = "metadata.json"
)

// Names are every artifact's name, in the order Render returns them.
var Names = []string{GraphJSON, GraphMermaid, Trajectory, Trail, Variables, Metadata}

// IsName reports whether name is one of Names.
func IsName(name string) bool { return slices.Contains(Names, name) }

// ContentType is the media type an artifact is served with.
func ContentType(name string) string {
	if name == GraphMermaid {
		return "text/plain; charset=utf-8"
	}
	return "application/json"
}

// Usage is the session's token and cost total as metadata.json carries it (spec 02 §11.2).
// CostUSD is present only when a price applied (the host file's pricing section or the
// ARCHMAX_PRICE_* variables priced some call); absent, never 0, when none did.
type Usage struct {
	InputTokens         int64    `json:"inputTokens"`
	OutputTokens        int64    `json:"outputTokens"`
	CacheReadTokens     int64    `json:"cacheReadTokens"`
	CacheCreationTokens int64    `json:"cacheCreationTokens"`
	CostUSD             *float64 `json:"costUsd,omitempty"`
}

// Source is what a session's artifacts are rendered from, as the store holds it.
type Source struct {
	SessionID string
	Workflow  string
	// Spec is the session's governing spec (its stored snapshot, whose hash is SpecHash);
	// nil when no snapshot is stored: graph.json and graph.mmd are then not rendered and
	// metadata.json has no runtimeContract.
	Spec     *spec.MachineSpec
	SpecHash string
	// Checkpoint reports that the session's record could be read; trail.json and
	// variables.json are rendered only then.
	Checkpoint bool
	Messages   []transcript.Message
	Trail      []transcript.TrailStep
	Variables  map[string]spec.VariableEntry
	Usage      *Usage // nil when nothing was spent
	// Version is metadata.json's packageVersion; "" is BuildVersion().
	Version string
}

// File is one rendered artifact.
type File struct {
	Name string
	Data []byte
}

// Render renders every artifact src has the input for, in Names order, each within
// MaxBytes: one that renders larger is left out like one whose input is missing (RenderOne
// tells the two apart).
func Render(src *Source) []File {
	var out []File
	for _, name := range Names {
		if data, err := RenderOne(src, name, MaxBytes); err == nil {
			out = append(out, File{Name: name, Data: data})
		}
	}
	return out
}

// One renders the artifact name within MaxBytes; ok is false for a name that is not an
// artifact's, one whose input src lacks, or one that renders larger.
func One(src *Source, name string) (data []byte, ok bool) {
	data, err := RenderOne(src, name, MaxBytes)
	return data, err == nil
}

// Available lists the artifacts src has the input for, in Names order, without rendering
// any.
func Available(src *Source) []string {
	out := make([]string, 0, len(Names))
	for _, name := range Names {
		switch name {
		case GraphJSON, GraphMermaid:
			if src.Spec == nil {
				continue
			}
		case Trail, Variables:
			if !src.Checkpoint {
				continue
			}
		}
		out = append(out, name)
	}
	return out
}

// RenderOne renders the artifact name in at most limit bytes: ErrNotRendered for a name
// that is not an artifact's or whose input src lacks, *TooLargeError (the rendering
// abandoned as soon as it passes limit) for one that would be larger. Every artifact costs
// time and memory linear in what src holds (IndentDepth).
func RenderOne(src *Source, name string, limit int64) ([]byte, error) {
	data, err := render(src, name, limit)
	var big *TooLargeError
	if errors.As(err, &big) {
		big.Artifact = name
	}
	return data, err
}

func render(src *Source, name string, limit int64) ([]byte, error) {
	switch name {
	case GraphJSON:
		if src.Spec == nil {
			return nil, ErrNotRendered
		}
		g := machine.GraphOf(src.Spec)
		return encode(graphFile{Graph: g, Mermaid: g.Mermaid(src.Spec)}, limit)
	case GraphMermaid:
		if src.Spec == nil {
			return nil, ErrNotRendered
		}
		mmd := machine.GraphOf(src.Spec).Mermaid(src.Spec)
		if int64(len(mmd))+1 > limit {
			return nil, &TooLargeError{Limit: limit}
		}
		return []byte(mmd + "\n"), nil
	case Trajectory:
		return encode(TrajectoryOf(src.SessionID, src.Workflow, src.Messages), limit)
	case Trail:
		if !src.Checkpoint {
			return nil, ErrNotRendered
		}
		steps := src.Trail
		if steps == nil {
			steps = []transcript.TrailStep{}
		}
		return encode(trailFile{SessionID: src.SessionID, Workflow: src.Workflow, Steps: steps}, limit)
	case Variables:
		if !src.Checkpoint {
			return nil, ErrNotRendered
		}
		vars := src.Variables
		if vars == nil {
			vars = map[string]spec.VariableEntry{}
		}
		return encode(variablesFile{SessionID: src.SessionID, Workflow: src.Workflow, Variables: vars}, limit)
	case Metadata:
		m := metadataFile{SessionID: src.SessionID, Workflow: src.Workflow, PackageVersion: src.Version, SpecHash: src.SpecHash}
		if m.PackageVersion == "" {
			m.PackageVersion = BuildVersion()
		}
		if src.Spec != nil {
			m.RuntimeContract = src.Spec.Runtime.Contract()
		}
		if u := src.Usage; u != nil && (u.InputTokens != 0 || u.OutputTokens != 0 || u.CacheReadTokens != 0 || u.CacheCreationTokens != 0 || u.CostUSD != nil) {
			m.Usage = u
		}
		return encode(m, limit)
	}
	return nil, ErrNotRendered
}

// graphFile is graph.json: the graph and its Mermaid text (spec 01 §3.7).
type graphFile struct {
	*machine.Graph
	Mermaid string `json:"mermaid"`
}

type trailFile struct {
	SessionID string                 `json:"sessionId"`
	Workflow  string                 `json:"workflow"`
	Steps     []transcript.TrailStep `json:"steps"`
}

type variablesFile struct {
	SessionID string                        `json:"sessionId"`
	Workflow  string                        `json:"workflow"`
	Variables map[string]spec.VariableEntry `json:"variables"`
}

type metadataFile struct {
	SessionID       string `json:"sessionId"`
	Workflow        string `json:"workflow"`
	RuntimeContract string `json:"runtimeContract,omitempty"`
	PackageVersion  string `json:"packageVersion"`
	SpecHash        string `json:"specHash,omitempty"`
	Usage           *Usage `json:"usage,omitempty"`
}

// BuildVersion is the version of the running build: the main module's version as the Go
// toolchain stamped it (a tag, or a pseudo-version from the checkout), "devel" when none.
// A file rendered on read names the build that rendered it.
func BuildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
