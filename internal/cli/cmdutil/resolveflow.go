package cmdutil

import (
	"strings"

	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// ResolveFlow returns the flow named by source and target (MM2's
// "source->target"). With both set the flow must be declared in cfg (enabled
// or not: MM2 may have written its topics before it was disabled). With one
// or none set, the enabled flows matching what is set are the candidates,
// and there must be exactly one. Any other case is a *FlagError (exit
// 2) that lists the candidates.
func ResolveFlow(cfg *config.Config, source, target string) (*config.Flow, error) {
	for _, a := range []struct{ flag, alias string }{{"--source", source}, {"--target", target}} {
		if a.alias == "" {
			continue
		}
		if _, ok := cfg.Cluster(a.alias); !ok {
			return nil, FlagErrorf("%s %s: no such cluster in %s (clusters: %s)", a.flag, a.alias, cfg.File, strings.Join(cfg.Clusters, ", "))
		}
	}
	if source != "" && target != "" {
		fl, ok := cfg.Flow(source, target)
		if !ok {
			return nil, FlagErrorf("no flow %s->%s in %s: source and target must be different clusters", source, target, cfg.File)
		}
		return fl, nil
	}
	var cands []*config.Flow
	for _, fl := range cfg.EnabledFlows() {
		if (source == "" || fl.Source == source) && (target == "" || fl.Target == target) {
			cands = append(cands, fl)
		}
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	what := "enables"
	switch {
	case source != "":
		what = "enables, from " + source + ","
	case target != "":
		what = "enables, to " + target + ","
	}
	if len(cands) == 0 {
		names := make([]string, 0, len(cfg.Flows))
		for _, fl := range cfg.Flows {
			names = append(names, fl.Name())
		}
		return nil, FlagErrorf("%s %s no flow; choose one with --source and --target (flows: %s)", cfg.File, what, strings.Join(names, ", "))
	}
	names := make([]string, len(cands))
	for i, fl := range cands {
		names[i] = fl.Name()
	}
	return nil, FlagErrorf("%s %s %d flows (%s); choose one with --source and --target", cfg.File, what, len(cands), strings.Join(names, ", "))
}

// SelectFlows returns the flows a reading command (lag, status) looks at,
// as engine configs: with neither source nor target set, every enabled
// flow of cfg (none is a *FlagError naming the file); else the one
// ResolveFlow names, which with requireEnabled must be enabled (a disabled
// one is a *FlagError: no replicate process copies it).
func SelectFlows(cfg *config.Config, source, target string, requireEnabled bool) ([]replicate.FlowConfig, error) {
	if source == "" && target == "" {
		var out []replicate.FlowConfig
		for _, f := range cfg.EnabledFlows() {
			out = append(out, FlowConfig(cfg, f))
		}
		if len(out) == 0 {
			return nil, FlagErrorf("%s enables no flow: set <source>-><target>.enabled = true, or name one with --source and --target", cfg.File)
		}
		return out, nil
	}
	fl, err := ResolveFlow(cfg, source, target)
	if err != nil {
		return nil, err
	}
	fc := FlowConfig(cfg, fl)
	if requireEnabled && !fc.Enabled {
		return nil, FlagErrorf("flow %s is disabled in %s (%s.enabled = false): no replicate process copies it", fl.Name(), cfg.File, fl.Name())
	}
	return []replicate.FlowConfig{fc}, nil
}
