package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/kafka"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/settings"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// newFactory wires the lazy providers in dependency order and returns the
// cleanup that closes whatever they opened. g is filled in by flag parsing
// before any provider is called.
func newFactory(ios *iostreams.IOStreams, logger *slog.Logger, g *globalOptions, budget *stopWatchdog) (*cmdutil.Factory, func()) {
	f := &cmdutil.Factory{
		IO:            ios,        // depends on nothing
		Logger:        logger,     // level set from -v when flags are resolved
		Now:           time.Now,   // depends on nothing
		SetStopBudget: budget.set, // depends on nothing
	}
	// depends on the resolved -c / MIRRORCTL_CONFIG / context; shell
	// completion runs before resolution, so the environment and the
	// context are consulted here too.
	f.ConfigPath = func() string {
		if g.configPath != "" {
			return g.configPath
		}
		if p := os.Getenv("MIRRORCTL_CONFIG"); p != "" {
			return p
		}
		if p := contextConfigPath(f, g); p != "" {
			return p
		}
		return defaultConfigFile
	}
	// depends on $MIRRORCTL_SETTINGS / $XDG_CONFIG_HOME / $HOME only
	f.Settings = sync.OnceValues(func() (*settings.File, error) { return settings.Load(settings.Path()) })
	// depends on the resolution of the globals (resolveGlobals)
	f.Resolved = func() []cmdutil.Resolved { return append([]cmdutil.Resolved(nil), g.resolved...) }
	// depends on the resolved -o / MIRRORCTL_OUTPUT
	f.Output = func() output.Format {
		if g.format == "" {
			return output.FormatTable
		}
		return g.format
	}
	// depends on ConfigPath
	f.Config = sync.OnceValues(func() (*config.Config, error) {
		path := f.ConfigPath()
		cfg, err := config.Load(path)
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w (%s)", err, configHint(g))
		}
		if d := settings.DisplayPath(path); err != nil && d != path {
			err = &maskedError{err: err, msg: strings.ReplaceAll(err.Error(), path, d)}
		}
		return cfg, err
	})
	// depends on Config and Logger
	var (
		mu sync.Mutex
		kf *kafka.Factory
	)
	f.Kafka = func() (*kafka.Factory, error) {
		mu.Lock()
		defer mu.Unlock()
		if kf != nil {
			return kf, nil
		}
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		kf = kafka.NewFactory(clientProps(cfg), logger)
		return kf, nil
	}
	// depends on the resolved --audit-log / MIRRORCTL_AUDIT_LOG
	f.AuditPath = func() string {
		if g.auditLog != "" {
			return g.auditLog
		}
		if p := os.Getenv("MIRRORCTL_AUDIT_LOG"); p != "" {
			return p
		}
		return audit.DefaultPath()
	}
	// depends on AuditPath
	var auditLog *audit.Log
	f.Audit = sync.OnceValues(func() (*audit.Log, error) {
		l, err := audit.Open(f.AuditPath())
		mu.Lock()
		auditLog = l
		mu.Unlock()
		return l, err
	})
	cleanup := func() {
		mu.Lock()
		defer mu.Unlock()
		if kf != nil {
			kf.Close()
			kf = nil
		}
		if auditLog != nil {
			_ = auditLog.Close()
			auditLog = nil
		}
	}
	return f, cleanup
}

// clientProps returns the lookup kafka.NewFactory uses: the client
// properties of cluster alias for role ("consumer", "producer", "admin"), as
// config.Cluster.ClientProps resolves them. An unknown alias is an error
// naming it.
func clientProps(cfg *config.Config) func(alias string, role replicate.ClientRole) (map[string]string, error) {
	return func(alias string, role replicate.ClientRole) (map[string]string, error) {
		cl, ok := cfg.Cluster(alias)
		if !ok {
			return nil, fmt.Errorf("cluster %q is not defined in the config (add it to clusters = ...)", alias)
		}
		return cl.ClientProps(role), nil
	}
}

// contextConfigPath returns the config path of the context named by
// --context, else $MIRRORCTL_CONTEXT, else the settings file's current one
// (relative to the settings file), or "" when there is none or it cannot be
// read. Only shell completion, which runs before resolveGlobals, needs it.
func contextConfigPath(f *cmdutil.Factory, g *globalOptions) string {
	sf, err := f.Settings()
	if err != nil {
		return ""
	}
	name := g.contextName
	if name == "" {
		name = os.Getenv(envContext)
	}
	c, err := sf.CurrentContext(name, "")
	if err != nil || c == nil || c.Config == "" {
		return ""
	}
	if filepath.IsAbs(c.Config) {
		return c.Config
	}
	return filepath.Join(filepath.Dir(sf.Path), c.Config)
}

// configHint says, for a config file that does not exist, where its path
// came from: a context (settings file and line) or MIRRORCTL_CONFIG, else
// how to name one.
func configHint(g *globalOptions) string {
	for _, r := range g.resolved {
		if r.Key != settings.KeyConfig {
			continue
		}
		switch r.Origin {
		case cmdutil.OriginContext:
			return fmt.Sprintf("the config of context %s, %s:%d; change it with 'mirrorctl context set %s --config <file>'",
				r.Name, settings.DisplayPath(r.File), r.Line, r.Name)
		case cmdutil.OriginEnv:
			return "from " + r.Name
		}
	}
	return "use -c <file>, set MIRRORCTL_CONFIG, or name it in a context: mirrorctl context set"
}

// maskedError is err with its message rewritten (credentials in a path
// masked); errors.Is and errors.As still see err, so the exit code stays.
type maskedError struct {
	err error
	msg string
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
