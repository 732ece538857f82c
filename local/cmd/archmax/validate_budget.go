package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/validate"
	"github.com/archmax-ai/archmax/local/runner"
)

// budgetFindings is the shared check of a USD budget on a workflow whose models no pricing
// entry prices (hostconfig.UnpricedBudgetProblem, DECISIONS BU22-3), as the engine runs it:
// the workflow's configured model ids and, under a turn or lifetime USD budget, those of
// the workflows it delegates to, transitively (session.BudgetModelIDs; the default model
// ARCHMAX_MODEL else the local default), the host file's pricing section, else the ARCHMAX_PRICE_*
// variables. One error finding located at the budget that sets the USD limit; none when
// the workflow does not load (its own findings say why) or has no USD budget.
func budgetFindings(ctx context.Context, files store.Files, slug string, host *hostconfig.Config, getenv func(string) string) []spec.Diagnostic {
	if host == nil || host.Budgets == nil || !host.Budgets.For(slug).USD() {
		return nil
	}
	file := "workflows/" + slug + "/workflow.yaml"
	src, err := files.Read(ctx, file)
	if err != nil {
		return nil
	}
	sp, err := spec.Load(slug, file, src)
	if err != nil {
		return nil
	}
	table := host.Pricing
	if table == nil {
		table, _ = pricing.FromEnv(getenv)
	}
	model := getenv(envModel)
	if model == "" {
		model = runner.DefaultModelID
	}
	load := func(sub string) *spec.MachineSpec { // a sub-workflow's spec, nil when it does not load
		f := "workflows/" + sub + "/workflow.yaml"
		src, err := files.Read(ctx, f)
		if err != nil {
			return nil
		}
		csp, err := spec.Load(sub, f, src)
		if err != nil {
			return nil
		}
		return csp
	}
	p := hostconfig.UnpricedBudgetProblem(host.Budgets, slug, session.BudgetModelIDs(host.Budgets, slug, sp, load, model, ""), table)
	if p == nil {
		return nil
	}
	at := host.Budgets.Session // the field names the scope that set the USD limit
	if w, ok := host.Budgets.Workflows[slug]; ok && p.Field != "budgets.session" {
		at = w
	}
	line, col := at.Line, at.Column
	if line == 0 {
		line, col = host.Budgets.Line, host.Budgets.Column
	}
	return []spec.Diagnostic{{Severity: "error", Code: p.Code, Field: p.Field, Message: p.Message, Hint: p.Hint,
		File: hostconfig.File, Line: line, Column: col}}
}

// budgetSlugFindings warns of each budgets.workflows entry that names no workflow of the
// workspace: a misspelt slug would leave the workflow it meant without its limits.
func budgetSlugFindings(ctx context.Context, files store.Files, host *hostconfig.Config) []spec.Diagnostic {
	if host == nil || host.Budgets == nil || len(host.Budgets.Workflows) == 0 {
		return nil
	}
	slugs, err := validate.Workflows(ctx, files)
	if err != nil {
		return nil
	}
	var out []spec.Diagnostic
	for _, slug := range slices.Sorted(maps.Keys(host.Budgets.Workflows)) {
		if slices.Contains(slugs, slug) {
			continue
		}
		w := host.Budgets.Workflows[slug]
		out = append(out, spec.Diagnostic{Severity: "warning", Code: hostconfig.CodeBudget, Field: "budgets.workflows." + slug,
			File: hostconfig.File, Line: w.Line, Column: w.Column,
			Message: fmt.Sprintf("'%s' names no workflow of this workspace (no workflows/%s/workflow.yaml): its limits apply to nothing", slug, slug),
			Hint:    "key the entry by the slug of a workflow folder under workflows/, or remove it"})
	}
	return out
}
