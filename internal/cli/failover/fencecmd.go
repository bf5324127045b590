package failover

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// fenceOptions are the flags of `mirrorctl fence add|remove|status`.
type fenceOptions struct {
	*Options
	Verb       string
	Principals []string
	Topics     []string
}

// NewCmdFence returns `mirrorctl fence` and its verbs.
func NewCmdFence(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fence {add | remove | status}",
		Short: "Stop, allow again, or list application writes to a flow's source topics",
		Long: "A write fence is DENY WRITE bindings on the source cluster (it needs an\n" +
			"authorizer) for the application producers' principals on the source topics\n" +
			"of the named groups (or of --topic): a planned failover puts one in place\n" +
			"(`failover apply --type planned --fence-principal P`), and it stays after,\n" +
			"so the old cluster takes no writes. Every add and remove is audited.",
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newFenceVerb(f, "add"), newFenceVerb(f, "remove"), newFenceVerb(f, "status"))
	return cmd
}

func newFenceVerb(f *cmdutil.Factory, verb string) *cobra.Command {
	o := &fenceOptions{Options: newOptions(f, false), Verb: verb}
	short := map[string]string{
		"add":    "Deny principals WRITE on the groups' source topics and wait until their end offsets stop",
		"remove": "Remove the write fence of principals on the groups' source topics",
		"status": "List the DENY WRITE bindings in place on the flow's source topics",
	}[verb]
	use := "fence " + verb + " --principal <principal>... {--group <name>... | --groups <regex> | --topic <name>...}"
	if verb == "status" {
		use = "fence status [--principal <principal>]... [--group <name>... | --groups <regex> | --topic <name>...]"
	}
	cmd := &cobra.Command{
		Use:   strings.TrimPrefix(use, "fence "),
		Short: short,
		Long: short + ".\n\nEXIT STATUS\n\n  0    done (status: whatever it found)\n  1    the source could not be read or written\n" +
			"  2    bad flags or an invalid mm2.properties\n  3    remove found no such fence: nothing was removed; add's end offsets kept moving\n",
		Example: fmt.Sprintf("$ mirrorctl fence %s --principal User:billing-app --group billing", verb),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if verb != "status" && len(o.Principals) == 0 {
				return cmdutil.FlagErrorf("name the producers with --principal (repeatable), e.g. User:billing-app")
			}
			if verb != "status" && len(o.Groups) == 0 && o.GroupsRE == "" && len(o.Topics) == 0 {
				return cmdutil.FlagErrorf("name the topics with --group, --groups or --topic")
			}
			o.Args = []string{"fence", verb}
			cmd.Flags().Visit(func(fl *pflag.Flag) {
				if sv, ok := fl.Value.(pflag.SliceValue); ok {
					for _, s := range sv.GetSlice() {
						o.Args = append(o.Args, "--"+fl.Name+"="+s)
					}
					return
				}
				o.Args = append(o.Args, "--"+fl.Name+"="+fl.Value.String())
			})
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Source, "source", "", "Source cluster `alias` of the flow (default: the config's one enabled flow)")
	fl.StringVar(&o.Target, "target", "", "Target cluster `alias` of the flow (default: the config's one enabled flow)")
	fl.StringArrayVar(&o.Groups, "group", nil, "Fence the source topics this consumer group `name` reads (repeatable)")
	fl.StringVar(&o.GroupsRE, "groups", "", "Fence the source topics the groups matching this `regex` read")
	fl.StringArrayVar(&o.Topics, "topic", nil, "Fence this source `topic` (repeatable)")
	fl.StringArrayVar(&o.Principals, "principal", nil, "Application producer `principal`, e.g. User:billing-app (repeatable)")
	return cmd
}

// FenceResult is the JSON document of `fence`.
type FenceResult struct {
	output.Envelope
	Verb     string                  `json:"verb"`
	Cluster  string                  `json:"cluster"`
	Topics   []string                `json:"topics"`
	Fence    *failover.Fence         `json:"fence,omitempty"`
	Bindings []failover.FenceBinding `json:"bindings"`
}

func (o *fenceOptions) run(ctx context.Context) error {
	eng, cfg, groups, err := cmdutil.SetupFailover(ctx, cmdutil.FailoverSetup{Config: o.Config, Clients: o.Clients, Logger: o.Logger, Now: o.Now,
		IO: o.IO, Source: o.Source, Target: o.Target, Groups: o.Groups, GroupsRE: o.GroupsRE, NoGroups: o.GroupsRE == ""})
	if err != nil {
		return err
	}
	src, _ := eng.Flow()
	topics := append([]string(nil), o.Topics...)
	if len(o.Groups) > 0 || o.GroupsRE != "" {
		plan, err := eng.PlanFailover(ctx, failover.PlanOptions{Groups: groups, Mode: failover.ModeExact})
		if err != nil {
			return err
		}
		topics = append(topics, failover.FenceTopics(plan)...)
		if len(topics) == 0 && o.Verb != "status" {
			return fmt.Errorf("the groups read no source topic of the flow: nothing to fence")
		}
	}
	res := FenceResult{Envelope: output.NewEnvelope(), Verb: o.Verb, Cluster: src, Topics: topics, Bindings: []failover.FenceBinding{}}
	var runErr error
	switch o.Verb {
	case "status":
		res.Bindings, runErr = eng.Fences(ctx, topics, o.Principals)
		if runErr == nil && len(res.Bindings) == 0 && o.Output() != output.FormatJSON {
			cmdutil.Notef(o.IO, "no write fence in place on %s", src)
		}
	case "add", "remove":
		runErr = o.change(ctx, eng, cfg.Digest(), topics, &res)
	}
	if runErr != nil && !errors.Is(runErr, cmdutil.ErrCheckFailed) {
		return runErr
	}
	if o.Output() == output.FormatJSON {
		if err := output.WriteJSON(o.IO.Out, res); err != nil {
			return err
		}
	} else if len(res.Bindings) > 0 {
		t := output.NewTable("principal", "topic", "pattern", "host")
		for _, b := range res.Bindings {
			t.AddRow(b.Principal, b.Topic, b.Pattern, b.Host)
		}
		if err := t.Render(o.IO, o.Output()); err != nil {
			return err
		}
	}
	return runErr
}

// change adds or removes the fence, audited; removing a fence that is not
// there changes nothing and is a failed check (exit 3).
func (o *fenceOptions) change(ctx context.Context, eng *failover.Engine, digest string, topics []string, res *FenceResult) error {
	before, err := eng.Fences(ctx, topics, o.Principals)
	if err != nil {
		return err
	}
	if o.Verb == "remove" && len(before) == 0 {
		cmdutil.Errorf(o.IO, "no write fence of %s on %s of %s: nothing removed", strings.Join(o.Principals, ", "), cmdutil.Plural(len(topics), "topic", "topics"), res.Cluster)
		return cmdutil.ErrCheckFailed
	}
	log, err := o.Audit()
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was changed)", err)
	}
	what := map[string]any{"principals": o.Principals, "topics": topics, "cluster": res.Cluster}
	op, err := log.Begin(ctx, "fence "+o.Verb, o.Args, digest, what)
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was changed)", err)
	}
	var cerr error
	if o.Verb == "add" {
		cmdutil.Notef(o.IO, "fencing %s (DENY WRITE) on %s of %s, then waiting for their end offsets to stop", strings.Join(o.Principals, ", "), cmdutil.Plural(len(topics), "topic", "topics"), res.Cluster)
		res.Fence, cerr = eng.Fence(ctx, topics, failover.FenceOptions{Principals: o.Principals})
	} else {
		cerr = eng.Unfence(ctx, topics, o.Principals)
	}
	st := audit.StatusOK
	if cerr != nil {
		st = audit.StatusFailed
	}
	if err := op.End(ctx, st, res.Fence, cerr); err != nil {
		cerr = errors.Join(cerr, fmt.Errorf("audit log: %w", err))
	}
	if cerr != nil {
		return cerr
	}
	if res.Bindings, err = eng.Fences(ctx, topics, o.Principals); err != nil {
		return err
	}
	if o.Verb == "add" {
		cmdutil.Successf(o.IO, "write fence in place for %s on %s of %s", strings.Join(o.Principals, ", "), cmdutil.Plural(len(topics), "topic", "topics"), res.Cluster)
	} else {
		cmdutil.Successf(o.IO, "write fence removed for %s on %s of %s (%d bindings)", strings.Join(o.Principals, ", "), cmdutil.Plural(len(topics), "topic", "topics"), res.Cluster, len(before))
	}
	return nil
}
