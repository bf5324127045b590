package cmdutil

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// FailoverSetup are the inputs of [SetupFailover].
type FailoverSetup struct {
	Config  func() (*config.Config, error)
	Clients func() (replicate.Clients, error)
	Logger  *slog.Logger
	Now     func() time.Time // nil is time.Now
	IO      *iostreams.IOStreams
	// Source and Target select the flow ([ResolveFlow] defaults).
	Source, Target string
	Groups         []string // --group
	GroupsRE       string   // --groups, anchored to the whole name
	OnTarget       bool     // list --groups on the target (failback)
	// NoGroups: the command names no group (fence --topic): an empty
	// list is not an error.
	NoGroups bool
	// NoClusterCheck skips the one-cluster check ([CheckOneCluster]): the
	// command never asks the source (an unplanned failover), or the pair
	// was checked already (the reverse flow of a checked one).
	NoClusterCheck bool
}

// SetupFailover resolves the flow and builds the failover engine and the
// group list shared by translate, failover and failback. Errors: the config's (exit 2), a
// *config.Error when the flow's two aliases are one cluster ([CheckOneCluster],
// exit 2), a *FlagError for a bad --groups regex or one matching nothing, and
// cluster errors listing groups.
func SetupFailover(ctx context.Context, o FailoverSetup) (*failover.Engine, *config.Config, []string, error) {
	source, target, groups, groupsRE, io := o.Source, o.Target, o.Groups, o.GroupsRE, o.IO
	cfg, err := o.Config()
	if cfg != nil {
		SummarizeWarnings(io, cfg)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	fl, err := ResolveFlow(cfg, source, target)
	if err != nil {
		return nil, nil, nil, err
	}
	var re *regexp.Regexp
	if groupsRE != "" {
		if re, err = regexp.Compile(`^(?:` + groupsRE + `)$`); err != nil {
			return nil, nil, nil, FlagErrorf("--groups %q: %w", groupsRE, err)
		}
	}
	clients, err := o.Clients()
	if err != nil {
		return nil, nil, nil, err
	}
	if !o.NoClusterCheck {
		if err := CheckOneCluster(ctx, cfg, clients, fl.Source, fl.Target); err != nil {
			return nil, nil, nil, err
		}
	}
	eng, err := failover.New(failover.Options{Flow: FlowConfig(cfg, fl), Clients: clients, Logger: o.Logger, Now: o.Now,
		Progress: scanProgress(io)})
	if err != nil {
		return nil, nil, nil, err
	}
	out := append([]string(nil), groups...)
	if re != nil {
		matched, err := eng.MatchGroups(ctx, re.MatchString, o.OnTarget)
		if err != nil {
			return nil, nil, nil, err
		}
		out = append(out, matched...)
	}
	if len(out) == 0 && !o.NoGroups {
		return nil, nil, nil, FlagErrorf("--groups %q matches no consumer group", groupsRE)
	}
	return eng, cfg, out, nil
}

// scanProgress returns the failover engine's progress hook: on a terminal's
// stderr a bar per phase of exact translation's reads ("reading us-east",
// partitions done of total), erased when the phase ends; nil (nothing
// drawn) when stderr is not a terminal.
func scanProgress(ios *iostreams.IOStreams) func(failover.ScanProgress) {
	if ios == nil || !ios.IsStderrTTY() {
		return nil
	}
	var bar *output.Progress
	return func(s failover.ScanProgress) {
		if s.End {
			if bar != nil {
				bar.Stop()
				bar = nil
			}
			return
		}
		if bar == nil {
			bar = output.NewProgress(ios, "reading "+output.Escape(s.Cluster), int64(s.Total), "partitions")
		}
		bar.Set(int64(s.Done))
	}
}

// Opt renders an optional offset or count: "-" when absent.
func Opt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}
