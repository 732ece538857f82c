package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/archmax-ai/archmax/core/spec"
)

// Environment variables the CLI reads beside the runtime's own (ARCHMAX_MODEL, AWS_REGION, …).
const (
	// envModelScript names a scripted model file the commands that run a model use when
	// neither --model-script nor --bedrock is given (a relative path resolves against the
	// folder of the .env file that set it, else the current directory).
	envModelScript = "ARCHMAX_MODEL_SCRIPT"
	// envModel is the default model id; set (and no scripted model chosen), it selects Bedrock.
	envModel = "ARCHMAX_MODEL"
	// envAPIBaseURL is the reference runtime's OpenAI-compatible endpoint, which archmax does not call.
	envAPIBaseURL = "ARCHMAX_API_BASE_URL"
)

// rootAlias lets every --workspace flag also be spelled --root, the reference CLI's name.
func rootAlias(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "root" {
		name = "workspace"
	}
	return pflag.NormalizedName(name)
}

// dotenv is what loadDotenv applied: for each key it set, the folder of the file that set it.
type dotenv map[string]string

// loadDotenv loads `.env` from the current directory, then from the workspace root (whose
// values replace the first file's), the reference CLI's rule: a variable of the process
// environment always wins; keys only the first file sets are kept. A missing or unreadable
// file is skipped, and a line that is no assignment is ignored (parseDotenv).
func loadDotenv(root string) (dotenv, error) {
	vals, dirs := map[string]string{}, dotenv{}
	cwd, _ := os.Getwd()
	seen := map[string]bool{}
	for _, dir := range []string{cwd, root} {
		abs, err := filepath.Abs(dir)
		if err != nil || seen[abs] {
			continue
		}
		seen[abs] = true
		src, err := os.ReadFile(filepath.Join(abs, ".env"))
		if err != nil {
			continue
		}
		for k, v := range parseDotenv(string(src)) {
			vals[k], dirs[k] = v, abs
		}
	}
	applied := dotenv{}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if _, set := os.LookupEnv(k); set {
			continue
		}
		if err := os.Setenv(k, vals[k]); err != nil {
			continue // a name the platform cannot hold
		}
		applied[k] = dirs[k]
	}
	return applied, nil
}

// dotenvLine is one assignment of a .env file, the grammar of the dotenv package the
// reference CLI loads with: an optional `export `, a key of letters, digits, '_', '.' or '-',
// '=' (or ': '), then a single-, double- or back-quoted value (which may span lines) or a
// bare one up to a '#' comment.
var dotenvLine = regexp.MustCompile(`(?m)^\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*` + "`(?:\\\\`|[^`])*`" + `|[^#\r\n]+)?\s*(?:#.*)?$`)

// dotenvQuoted strips a value's matching outer quotes.
var dotenvQuoted = regexp.MustCompile("(?s)^(['\"`])(.*)['\"`]$")

// parseDotenv reads a .env file's assignments (later ones win); lines that match no
// assignment are ignored, as the reference's loader ignores them.
func parseDotenv(src string) map[string]string {
	src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n")
	out := map[string]string{}
	for _, m := range dotenvLine.FindAllStringSubmatch(src, -1) {
		v := strings.TrimSpace(m[2])
		if q := dotenvQuoted.FindStringSubmatch(v); q != nil && v[len(v)-1] == q[1][0] {
			v = q[2]
			if q[1] == `"` {
				v = strings.NewReplacer(`\n`, "\n", `\r`, "\r").Replace(v)
			}
		}
		out[m[1]] = v
	}
	return out
}

// modelChoice settles which model a command runs (flags win, then the environment): a
// scripted model file, or Amazon Bedrock. With neither flag, ARCHMAX_MODEL_SCRIPT names a
// script, else a set ARCHMAX_MODEL selects Bedrock; with nothing set it is a usage error
// saying how to choose.
func modelChoice(script string, bedrock bool, env dotenv) (string, bool, error) {
	switch {
	case bedrock && script != "":
		return "", false, errors.New("--model-script and --bedrock are mutually exclusive: pick one model")
	case bedrock || script != "":
		return script, bedrock, nil
	}
	if s := os.Getenv(envModelScript); s != "" {
		if dir, ok := env[envModelScript]; ok && !filepath.IsAbs(s) {
			s = filepath.Join(dir, s)
		}
		return s, false, nil
	}
	if os.Getenv(envModel) != "" {
		return "", true, nil
	}
	msg := "choose the model: --model-script FILE (offline, scripted) or --bedrock (Amazon Bedrock); or set " +
		envModelScript + " or " + envModel + " in the environment or the workspace's .env"
	if os.Getenv(envAPIBaseURL) != "" {
		msg += " (" + envAPIBaseURL + " names an OpenAI-compatible endpoint, which archmax does not call: models run on Amazon Bedrock)"
	}
	return "", false, errors.New(msg)
}

// workspaceWorkflows lists the workflow slugs of a workspace: the folders under workflows/
// that hold a workflow.yaml, sorted.
func workspaceWorkflows(root string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "workflows"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if st, err := os.Stat(filepath.Join(root, "workflows", e.Name(), "workflow.yaml")); err == nil && st.Mode().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// isWorkflowOf reports whether name is a workflow of the workspace at root.
func isWorkflowOf(root, name string) bool {
	if !spec.IsSlug(name) {
		return false
	}
	st, err := os.Stat(filepath.Join(root, "workflows", name, "workflow.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// onlyWorkflow is the workspace's one workflow; with none or several it is a usage error
// naming them (the reference CLI has no default workflow).
func onlyWorkflow(root string) (string, error) {
	slugs, err := workspaceWorkflows(root)
	if err != nil {
		return "", usageError{fmt.Errorf("workspace %q: %w", root, err)}
	}
	switch len(slugs) {
	case 1:
		return slugs[0], nil
	case 0:
		return "", usageError{fmt.Errorf("a workflow is required and workspace %q has none (no workflows/<slug>/workflow.yaml); pass --workspace DIR", root)}
	}
	return "", usageError{fmt.Errorf("a workflow is required; this workspace has several: %s", strings.Join(slugs, ", "))}
}

// checkWorkflowArg refuses a WORKFLOW argument that is not a slug.
func checkWorkflowArg(name string) error {
	if !spec.IsSlug(name) {
		return usageError{errors.New(spec.WorkflowSlugRejection(name))}
	}
	return nil
}
