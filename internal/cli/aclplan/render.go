package aclplan

import (
	"fmt"

	"github.com/mirrorctl/mirrorctl/aclplan"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// printNotes writes the plan's notes to stderr, warnings marked.
func printNotes(opts *ACLPlanOptions, notes []aclplan.Note) {
	for _, n := range notes {
		say := cmdutil.Notef
		if n.Level == aclplan.NoteWarning {
			say = cmdutil.Warnf
		}
		if n.Flow != "" {
			say(opts.IO, "%s: %s", n.Flow, n.Text)
		} else {
			say(opts.IO, "%s", n.Text)
		}
	}
}

// tableFormat maps --format/-o to the table renderer's format.
func tableFormat(format string) output.Format {
	switch format {
	case string(output.FormatCSV):
		return output.FormatCSV
	case string(output.FormatTSV):
		return output.FormatTSV
	}
	return output.FormatTable
}

var bindingHeaders = []string{"cluster", "principal", "host", "resource type", "pattern", "resource", "operation", "permission"}

func bindingCells(b aclplan.Binding) []string {
	return []string{b.Cluster, b.Principal, b.Host, b.ResourceType, b.PatternType, b.ResourceName, b.Operation, b.Permission}
}

func renderPlan(opts *ACLPlanOptions, format string, plan *aclplan.Plan, bootstrap map[string]string) error {
	switch format {
	case FormatJSON:
		return output.WriteJSON(opts.IO.Out, PlanResult{Envelope: output.NewEnvelope(), Bindings: plan.Bindings, Notes: plan.Notes})
	case FormatKafkaACLs:
		return aclplan.WriteKafkaACLs(opts.IO.Out, plan, bootstrap)
	}
	printNotes(opts, plan.Notes)
	t := output.NewTable(append(bindingHeaders, "reason")...)
	for _, b := range plan.Bindings {
		t.AddRow(append(bindingCells(b), b.Reason)...)
	}
	return t.Render(opts.IO, tableFormat(format))
}

func renderDiff(opts *ACLPlanOptions, format string, plan *aclplan.Plan, entries []aclplan.DiffEntry, bootstrap map[string]string) error {
	missing := 0
	var missingPlan aclplan.Plan
	missingPlan.Notes = plan.Notes
	for _, e := range entries {
		if e.Status == aclplan.StatusMissing {
			missing++
			missingPlan.Bindings = append(missingPlan.Bindings, e.Binding)
		}
	}
	var err error
	switch format {
	case FormatJSON:
		err = output.WriteJSON(opts.IO.Out, DiffResult{Envelope: output.NewEnvelope(), Diff: entries, Notes: plan.Notes})
	case FormatKafkaACLs:
		// Only what is missing, ready to run.
		err = aclplan.WriteKafkaACLs(opts.IO.Out, &missingPlan, bootstrap)
	default:
		printNotes(opts, plan.Notes)
		t := output.NewTable(append(append([]string{"status"}, bindingHeaders...), "via", "reason")...)
		for _, e := range entries {
			t.AddRow(append(append([]string{e.Status}, bindingCells(e.Binding)...), e.Via, e.Binding.Reason)...)
		}
		err = t.Render(opts.IO, tableFormat(format))
	}
	if err != nil {
		return err
	}
	if missing > 0 {
		return cmdutilCheckFailed(missing)
	}
	return nil
}

func renderApply(opts *ACLPlanOptions, format string, res ApplyResult) error {
	if format == FormatJSON {
		return output.WriteJSON(opts.IO.Out, res)
	}
	printNotes(opts, res.Notes)
	t := output.NewTable(append(append([]string{"result"}, bindingHeaders...), "reason")...)
	for _, r := range res.Created {
		status := "created"
		if r.Error != "" {
			status = "failed: " + r.Error
		}
		t.AddRow(append(append([]string{status}, bindingCells(r.Binding)...), r.Binding.Reason)...)
	}
	if err := t.Render(opts.IO, tableFormat(format)); err != nil {
		return err
	}
	created := 0
	for _, r := range res.Created {
		if r.Error == "" {
			created++
		}
	}
	fmt.Fprintf(opts.IO.ErrOut, "%d bindings created, %d already present\n", created, res.Present)
	return nil
}

func cmdutilCheckFailed(missing int) error {
	return cmdutil.CheckFailedf("%d planned ACL bindings are missing", missing)
}
