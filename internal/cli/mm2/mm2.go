// Package mm2 implements `mirrorctl mm2`: moving a flow between mirrorctl
// and MirrorMaker 2. `mm2 handoff` writes mirrorctl's copy positions as MM2's
// Connect source offsets, so a restarted MM2 resumes where mirrorctl stopped
// (the way back of a migration; `replicate` takes a flow over from MM2 by
// itself).
package mm2

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// NewCmdMM2 returns the `mirrorctl mm2` command group.
func NewCmdMM2(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mm2 <command>",
		Short: "Move flows between mirrorctl and MirrorMaker 2",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdHandoff(f, nil))
	return cmd
}

// HandoffOptions are the dependencies and flags of `mirrorctl mm2 handoff`.
type HandoffOptions struct {
	IO      *iostreams.IOStreams
	Output  func() output.Format
	Config  func() (*config.Config, error)
	Clients func() (replicate.Clients, error)
	Audit   func() (*audit.Log, error)
	Logger  *slog.Logger

	Flows []string // --flow, repeatable; default every enabled flow
	Apply bool
	Args  []string // the command line, for the audit entry
}

// HandoffResult is the JSON document of `mirrorctl mm2 handoff -o json`.
type HandoffResult struct {
	output.Envelope
	Applied bool                     `json:"applied"`
	Flows   []*replicate.HandoffPlan `json:"flows"`
	Written int                      `json:"written"`
}

// NewCmdHandoff returns `mirrorctl mm2 handoff`. If runF is non-nil it is
// called with the options instead of running (tests).
func NewCmdHandoff(f *cmdutil.Factory, runF func(*HandoffOptions) error) *cobra.Command {
	opts := &HandoffOptions{IO: f.IO, Output: f.Output, Config: f.Config, Audit: f.Audit, Logger: f.Logger,
		Clients: func() (replicate.Clients, error) { return f.Kafka() }}
	cmd := &cobra.Command{
		Use:   "handoff [--flow <source>-><target>]... [--apply]",
		Short: "Write mirrorctl's positions as MirrorMaker 2's source offsets",
		Long: "Hand a flow back to MirrorMaker 2: for every partition mirrorctl copied, write\n" +
			"its position (the next source offset, minus one: the last record copied) as\n" +
			"MM2's Connect source offset into MM2's offsets topic on the target\n" +
			"(offset.storage.topic, mm2-offsets.<source>.internal in dedicated mode;\n" +
			"mirrorctl.mm2.offsets.topic for a Connect cluster), so that MM2, restarted on\n" +
			"the same mm2.properties, resumes where mirrorctl stopped and copies nothing\n" +
			"twice. Stop `replicate` first (a graceful stop saves the position), and keep\n" +
			"MM2 stopped until the hand-back is written: both are checked.\n\n" +
			"Without --apply it prints the plan and writes nothing. A partition where MM2\n" +
			"already copied further is left alone. --apply writes the plan and records it\n" +
			"in the audit log (--audit-log).\n\n" +
			"EXIT STATUS\n\n" +
			"  0    planned, or written\n" +
			"  1    an error (the message says what was written)\n" +
			"  2    bad flags or an invalid mm2.properties\n" +
			"  3    blocked: MM2 or a replicate process still runs the flow, or MM2's\n" +
			"       offsets topic does not exist; nothing written",
		Example: "$ mirrorctl mm2 handoff -c mm2.properties\n" +
			"$ mirrorctl mm2 handoff -c mm2.properties --flow 'us-east->eu-west' --apply -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Args = []string{"mm2", cmd.Name()}
			cmd.Flags().Visit(func(f *pflag.Flag) {
				if sv, ok := f.Value.(pflag.SliceValue); ok {
					for _, s := range sv.GetSlice() {
						opts.Args = append(opts.Args, "--"+f.Name+"="+s)
					}
					return
				}
				opts.Args = append(opts.Args, "--"+f.Name+"="+f.Value.String())
			})
			if runF != nil {
				return runF(opts)
			}
			return runHandoff(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Flows, "flow", nil, "Hand back only this `source->target` flow (repeatable)")
	cmd.Flags().BoolVar(&opts.Apply, "apply", false, "Write the plan (audited)")
	return cmd
}

func runHandoff(ctx context.Context, opts *HandoffOptions) error {
	cfg, err := opts.Config()
	if cfg != nil {
		cmdutil.SummarizeWarnings(opts.IO, cfg)
	}
	if err != nil {
		return err
	}
	var flows []replicate.FlowConfig
	for _, fl := range cfg.Flows {
		if len(opts.Flows) > 0 && !contains(opts.Flows, fl.Name()) || !fl.Enabled {
			continue
		}
		flows = append(flows, cmdutil.FlowConfig(cfg, fl))
	}
	for _, n := range opts.Flows {
		found := false
		for _, f := range flows {
			found = found || f.Name() == n
		}
		if !found {
			return cmdutil.FlagErrorf("--flow %s: no enabled flow of that name in %s", n, cfg.File)
		}
	}
	if len(flows) == 0 {
		return cmdutil.FlagErrorf("%s enables no flow: nothing to hand back", cfg.File)
	}
	clients, err := opts.Clients()
	if err != nil {
		return err
	}
	res := HandoffResult{Envelope: output.NewEnvelope(), Flows: []*replicate.HandoffPlan{}}
	blocked := 0
	for _, f := range flows {
		p, err := replicate.PlanHandoff(ctx, f, clients)
		if err != nil {
			return err
		}
		if p.Blocked != "" {
			blocked++
		}
		res.Flows = append(res.Flows, p)
	}
	var applyErr error
	if opts.Apply && blocked == 0 {
		res.Applied = true
		applyErr = apply(ctx, opts, cfg, flows, &res)
	}
	if err := render(opts, res); err != nil {
		return err
	}
	if applyErr != nil {
		return applyErr
	}
	if blocked > 0 {
		for _, p := range res.Flows {
			if p.Blocked != "" {
				cmdutil.Warnf(opts.IO, "flow %s: hand-back blocked: %s", p.Flow, p.Blocked)
			}
		}
		return cmdutil.CheckFailedf("%s blocked; nothing written", cmdutil.Plural(blocked, "flow", "flows"))
	}
	switch {
	case res.Applied:
		cmdutil.Successf(opts.IO, "wrote %d MM2 source offsets: MM2 restarted on %s resumes where mirrorctl stopped", res.Written, cfg.File)
	default:
		n := 0
		for _, p := range res.Flows {
			n += p.Writes()
		}
		cmdutil.Notef(opts.IO, "plan only: %d MM2 source offsets would be written; run again with --apply", n)
	}
	return nil
}

func apply(ctx context.Context, opts *HandoffOptions, cfg *config.Config, flows []replicate.FlowConfig, res *HandoffResult) error {
	log, err := opts.Audit()
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was written)", err)
	}
	op, err := log.Begin(ctx, "mm2 handoff", opts.Args, cfg.Digest(), res.Flows)
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was written)", err)
	}
	var errs []error
	for i, f := range flows {
		n, err := replicate.ApplyHandoff(ctx, f, opts.clients(), res.Flows[i])
		res.Written += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	werr := errors.Join(errs...)
	st := audit.StatusOK
	switch {
	case werr != nil && res.Written > 0:
		st = audit.StatusPartial
	case werr != nil:
		st = audit.StatusFailed
	}
	if err := op.End(ctx, st, map[string]any{"written": res.Written}, werr); err != nil {
		werr = errors.Join(werr, fmt.Errorf("audit log: %w", err))
	}
	return werr
}

func (o *HandoffOptions) clients() replicate.Clients {
	c, _ := o.Clients() // already built once by runHandoff
	return c
}

func render(opts *HandoffOptions, res HandoffResult) error {
	if opts.Output() == output.FormatJSON {
		return output.WriteJSON(opts.IO.Out, res)
	}
	t := output.NewTable("flow", "topic", "partition", "mirrorctl next", "mm2 last copied", "write", "action")
	num := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return strconv.FormatInt(n, 10)
	}
	for _, p := range res.Flows {
		for _, r := range p.Rows {
			t.AddRow(p.Flow, r.Topic, strconv.Itoa(int(r.Partition)), num(r.Progress), num(r.MM2Offset), num(r.Write), r.Action)
		}
		if p.OutsideFlow > 0 {
			cmdutil.Notef(opts.IO, "flow %s: %s of topics the flow does not mirror now (topics, topics.exclude) left alone", p.Flow, cmdutil.Plural(p.OutsideFlow, "partition", "partitions"))
		}
		if p.Skipped > 0 {
			cmdutil.Warnf(opts.IO, "flow %s: %s of %s are not Connect source offsets; skipped", p.Flow, cmdutil.Plural(p.Skipped, "record", "records"), p.OffsetsTopic)
		}
	}
	return t.Render(opts.IO, opts.Output())
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.TrimSpace(v) == s {
			return true
		}
	}
	return false
}
