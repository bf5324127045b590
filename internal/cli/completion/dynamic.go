package completion

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
)

// ClusterTimeout bounds each completion that asks a cluster (groups,
// topics): a shell waits for it, so it is short, and a cluster that does not
// answer in time simply completes nothing.
const ClusterTimeout = 2 * time.Second

// Register adds dynamic completion to every flag of root's tree that names
// something in the config or on a cluster, unless the command registered
// its own:
//   - --source, --target, --cluster, --from, --to: the cluster aliases of
//     the config (-c, else $MIRRORCTL_CONFIG, else the current context's,
//     else ./mm2.properties);
//   - --flow: every source->target flow of the config, enabled ones first;
//   - --group: the consumer groups of the source cluster (ListGroups);
//   - --topic: the topics of the source cluster, or of the target for
//     `checkpoints dump` (whose --topic is target-side).
//
// The cluster of --group and --topic is --source (--target) when given on
// the command line, else the config's one enabled flow's. Every failure (no
// config, an invalid one, a cluster down, no rights, ClusterTimeout) completes
// nothing and prints nothing; file names are never offered.
func Register(root *cobra.Command, f *cmdutil.Factory) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if _, ok := c.GetFlagCompletionFunc(fl.Name); ok {
				return
			}
			var fn func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)
			switch fl.Name {
			case "source", "target", "cluster", "from", "to":
				fn = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return aliases(f), cobra.ShellCompDirectiveNoFileComp
				}
			case "flow":
				fn = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return flows(f), cobra.ShellCompDirectiveNoFileComp
				}
			case "group":
				fn = func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
					return groups(cmd, f), cobra.ShellCompDirectiveNoFileComp
				}
			case "topic":
				fn = func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
					return topics(cmd, f), cobra.ShellCompDirectiveNoFileComp
				}
			default:
				return
			}
			_ = c.RegisterFlagCompletionFunc(fl.Name, fn)
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func loadConfig(f *cmdutil.Factory) *config.Config {
	if f.Config == nil {
		return nil
	}
	cfg, err := f.Config()
	if err != nil {
		return nil
	}
	return cfg
}

func aliases(f *cmdutil.Factory) []string {
	cfg := loadConfig(f)
	if cfg == nil {
		return nil
	}
	return slices.Clone(cfg.Clusters)
}

func flows(f *cmdutil.Factory) []string {
	cfg := loadConfig(f)
	if cfg == nil {
		return nil
	}
	var on, off []string
	for _, fl := range cfg.Flows {
		if fl.Enabled {
			on = append(on, fl.Name()+"\tenabled")
		} else {
			off = append(off, fl.Name())
		}
	}
	return append(on, off...)
}

// clusterFor returns the alias whose groups or topics complete: the flag
// (source or target) when set on the command line, else that side of the
// config's one enabled flow.
func clusterFor(cmd *cobra.Command, cfg *config.Config, side string) string {
	if fl := cmd.Flags().Lookup(side); fl != nil && fl.Value.String() != "" {
		return fl.Value.String()
	}
	if side == "source" {
		if fl := cmd.Flags().Lookup("cluster"); fl != nil && fl.Value.String() != "" {
			return fl.Value.String()
		}
	}
	enabled := cfg.EnabledFlows()
	if len(enabled) != 1 {
		return ""
	}
	if side == "target" {
		return enabled[0].Target
	}
	return enabled[0].Source
}

func groups(cmd *cobra.Command, f *cmdutil.Factory) []string {
	adm, ctx, cancel := clusterAdmin(cmd, f, "source")
	if adm == nil {
		return nil
	}
	defer cancel()
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil
	}
	out := listed.Groups()
	slices.Sort(out)
	return out
}

func topics(cmd *cobra.Command, f *cmdutil.Factory) []string {
	side := "source"
	if strings.HasPrefix(cmd.CommandPath(), cmd.Root().Name()+" checkpoints") {
		side = "target"
	}
	adm, ctx, cancel := clusterAdmin(cmd, f, side)
	if adm == nil {
		return nil
	}
	defer cancel()
	td, err := adm.ListTopics(ctx)
	if err != nil {
		return nil
	}
	return td.Names()
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// clusterAdmin returns the admin client of the cluster on side ("source" or
// "target") of the command's flow and a context bounded by ClusterTimeout;
// nil when there is no config, no such cluster or no client (completion is
// silent then).
func clusterAdmin(cmd *cobra.Command, f *cmdutil.Factory, side string) (*kadm.Client, context.Context, context.CancelFunc) {
	cfg := loadConfig(f)
	if cfg == nil || f.Kafka == nil {
		return nil, nil, nil
	}
	alias := clusterFor(cmd, cfg, side)
	if alias == "" {
		return nil, nil, nil
	}
	kf, err := f.Kafka()
	if err != nil {
		return nil, nil, nil
	}
	adm, err := kf.Admin(alias)
	if err != nil {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(contextOf(cmd), ClusterTimeout)
	return adm, ctx, cancel
}
