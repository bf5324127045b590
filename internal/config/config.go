package config

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mirrorctl/mirrorctl/replicate/clientrole"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// Option configures Load and Parse.
type Option func(*options)

type options struct {
	env func(string) (string, bool)
}

// WithEnv sets the environment lookup used by EnvVarConfigProvider
// references (${env:VAR}), overriding the default os.LookupEnv. Tests inject
// a map-backed lookup with it.
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.env = lookup }
}

// Role is the client role a cluster's properties are assembled for: the
// one type of package replicate/clientrole.
type Role = clientrole.Role

// The three client roles of MM2 (the consumer.*, producer.* and admin.*
// prefixes).
const (
	RoleConsumer = clientrole.Consumer
	RoleProducer = clientrole.Producer
	RoleAdmin    = clientrole.Admin
)

// Origin values of a Setting.
const (
	OriginDefault  = "default"   // the Kafka 4.0 default; File and Line are empty
	OriginTopLevel = "top-level" // an unprefixed key
	OriginCluster  = "cluster"   // an A.<key> key (client and worker settings)
	OriginFlow     = "flow"      // an A->B.<key> override
)

// Setting is one effective setting with where it came from, for
// `config show`. Value is safe to print: it is "**redacted**" when the key
// IsSensitive, and the ${provider:...} reference as written when the value
// came from a config provider (the resolved value is never shown, whatever
// the key).
type Setting struct {
	Key    string
	Value  string
	Origin string // OriginDefault, OriginTopLevel, OriginCluster or OriginFlow
	File   string // "" for defaults
	Line   int    // 0 for defaults
}

// Config is a parsed and validated mm2.properties file (MM2's
// MirrorMakerConfig): the cluster aliases, every flow between them and the
// warnings found on the way. It is immutable after Load and safe for
// concurrent use. Secret values are held in memory only, resolved from
// config providers, and never printed by any method.
type Config struct {
	// File is the name given to Load or Parse, used in errors and warnings.
	File string
	// Clusters are the aliases of the `clusters` key, in declared order.
	Clusters []string
	// Flows holds every ordered pair A->B of distinct aliases, enabled or
	// not, sorted by (source, target).
	Flows []*Flow
	// Warnings are unknown or misspelt keys (with a "did you mean"
	// suggestion), settings ignored where they were written (client
	// overrides at flow level, connector keys at cluster level), MM2 and
	// Connect keys mirrorctl accepts but does not act on, deprecated
	// aliases and duplicate keys, sorted by line.
	Warnings []Warning
	// Notes are MM2 keys set in the file that mirrorctl acts on with a
	// meaning that differs from MM2's (tasks.max, ...), sorted by line:
	// `config validate` and `replicate --dry-run` print them; they are not
	// warnings (nothing is wrong, and --strict accepts them).
	Notes []Warning
	// Acknowledged are the warnings of keys listed in
	// mirrorctl.warnings.acknowledged: read and accepted by the operator,
	// so no command prints them; config validate lists them (JSON severity
	// "acknowledged").
	Acknowledged []Warning

	clusters map[string]*Cluster
	top      map[string]*entry            // top-level key -> entry
	byAlias  map[string]map[string]*entry // alias -> key without "A." -> entry
}

// entry is one key of the file after duplicate removal and provider
// resolution.
type entry struct {
	key   string // as written, prefixes included
	raw   string // as written (escapes decoded), references unresolved
	value string // resolved
	line  int
	ref   bool // value went through a config provider
}

// display is the printable form of an entry's value under key k.
func (e *entry) display(k string) string {
	switch {
	case e.value != "" && IsSensitive(k):
		return redacted
	case e.ref:
		return e.raw
	case isServersKey(k):
		return MaskServers(e.value)
	}
	return e.value
}

// Cluster is one alias of the `clusters` list with its client settings.
type Cluster struct {
	// Alias is the cluster's name in the file (e.g. "us-east").
	Alias string
	// Line is the line of the `clusters` key that declares it.
	Line int

	cfg *Config
}

// Flow is one replication direction Source->Target (an MM2 herder
// "Source->Target" with its MirrorSource/Checkpoint/Heartbeat connectors).
// Its settings follow MM2's precedence: Kafka 4.0 defaults < top-level keys
// < Source->Target.* overrides; Connect worker keys
// (offset.flush.interval.ms, exactly.once.source.support) come from defaults
// < top-level < Target.<key>, as MM2 builds a herder's worker from its
// target cluster.
type Flow struct {
	Source, Target string
	// Enabled is Source->Target.enabled (default false).
	Enabled bool
	// Line is the line of Source->Target.enabled, or 0 when unset.
	Line int

	file   string
	props  map[string]*prop
	policy policy.Policy
	topics filter.TopicFilter
	groups filter.GroupFilter
	cprops filter.ConfigPropertyFilter
}

// prop is one effective flow setting.
type prop struct {
	value   string // resolved
	display string
	origin  string
	line    int
}

// Load reads and validates the mm2.properties file at path; see Parse.
func Load(path string, opts ...Option) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error(), Err: err}
	}
	return Parse(path, bytes.NewReader(b), opts...)
}

// Parse reads and validates an mm2.properties document from r, with name
// used in errors and warnings. It follows Java .properties syntax
// (java.util.Properties: continuations, escapes, '=', ':' or space
// separators, '#' and '!' comments; read as UTF-8) and MM2's
// MirrorMakerConfig rules (docs/mm2-formats.md §10). ${provider:[path:]key}
// references are resolved in memory with the providers declared in
// config.providers (EnvVarConfigProvider, FileConfigProvider,
// DirectoryConfigProvider).
//
// Every problem found is returned, errors.Join-ed, each an *Error with file,
// line and key; no error text contains a property value. On validation
// errors the returned *Config is non-nil but must only be used to report its
// Warnings; it is nil only when r cannot be read or `clusters` is missing.
func Parse(name string, r io.Reader, opts ...Option) (*Config, error) {
	o := options{env: os.LookupEnv}
	for _, opt := range opts {
		opt(&o)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &Error{File: name, Msg: "reading: " + err.Error(), Err: err}
	}
	l := &loader{file: name, env: o.env}
	cfg := l.load(string(b))
	if cfg != nil {
		cfg.Warnings, cfg.Acknowledged = acknowledge(name, cfg.top[KeyAcknowledged], sortWarnings(l.warns))
		cfg.Notes = sortWarnings(l.notes)
	}
	if len(l.errs) > 0 {
		errs := sortErrors(l.errs)
		joined := make([]error, len(errs))
		for i, e := range errs {
			joined[i] = e
		}
		return cfg, errors.Join(joined...)
	}
	return cfg, nil
}

// Process returns a top-level-only key of mirrorctl's own (KeyInstanceID,
// KeyStopBudget, KeyUnreachableGrace): its value (the default when unset), the line it was set
// on (0 when unset), and whether the key is one.
func (c *Config) Process(key string) (value string, line int, ok bool) {
	ki, known := knownKeys[key]
	if !known || ki.scope != scopeTop {
		return "", 0, false
	}
	if e, set := c.top[key]; set {
		return e.value, e.line, true
	}
	return ki.def, 0, true
}

// Cluster returns the cluster with the given alias.
func (c *Config) Cluster(alias string) (*Cluster, bool) {
	cl, ok := c.clusters[alias]
	return cl, ok
}

// Flow returns the flow source->target; ok is false unless both aliases are
// declared and distinct.
func (c *Config) Flow(source, target string) (*Flow, bool) {
	i, ok := slices.BinarySearchFunc(c.Flows, [2]string{source, target}, func(f *Flow, k [2]string) int {
		return cmp.Or(cmp.Compare(f.Source, k[0]), cmp.Compare(f.Target, k[1]))
	})
	if !ok {
		return nil, false
	}
	return c.Flows[i], true
}

// EnabledFlows returns the flows with Source->Target.enabled = true, sorted
// by (source, target).
func (c *Config) EnabledFlows() []*Flow {
	var out []*Flow
	for _, f := range c.Flows {
		if f.Enabled {
			out = append(out, f)
		}
	}
	return out
}

// Digest returns the hex SHA-256 of the effective settings: the cluster
// list, every cluster's client settings per role and every flow's
// settings, in a canonical sorted form, for audit entries. Values are taken
// as Setting shows them, so sensitive values enter only as "**redacted**"
// and provider-resolved values as their ${...} reference: the digest never
// depends on a secret, and two files that differ only in where a setting is
// written (top level or per flow) have the same digest.
func (c *Config) Digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "clusters=%q\n", c.Clusters)
	for _, a := range c.Clusters {
		cl := c.clusters[a]
		for _, r := range roles {
			for _, s := range cl.ClientSettings(r) {
				fmt.Fprintf(h, "cluster %q %s %q=%q\n", a, r, s.Key, s.Value)
			}
		}
	}
	for _, f := range c.Flows {
		for _, s := range f.Settings() {
			fmt.Fprintf(h, "flow %q %q=%q\n", f.Name(), s.Key, s.Value)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ClientProps returns the Kafka client properties of this cluster for a
// role, assembled as MM2 does, lowest to highest precedence:
//  1. top-level client security keys (bootstrap.servers, security.protocol,
//     ssl.*, sasl.*);
//  2. the same keys at cluster level (A.bootstrap.servers, A.ssl.*, ...);
//  3. top-level role overrides (consumer.*, producer.* or admin.*, prefix
//     stripped; the MM2 connector keys consumer.poll.timeout.ms and
//     admin.timeout.ms are not client keys and are left out);
//  4. cluster-level role overrides (A.consumer.*, ..., prefix stripped).
//
// Values are resolved (config providers) and raw: never print or log them;
// pass them through Display, or use ClientSettings.
func (c *Cluster) ClientProps(role Role) map[string]string {
	m := map[string]string{}
	for k, p := range c.clientProps(role) {
		m[k] = p.value
	}
	return m
}

// ClientSettings is ClientProps with origins and printable values, sorted by
// key, for `config show`.
func (c *Cluster) ClientSettings(role Role) []Setting {
	return settings(c.cfg.File, c.clientProps(role))
}

// BootstrapServers returns the cluster's effective bootstrap.servers
// (cluster-level, else top-level) split on commas and trimmed, each entry
// masked by MaskServers so that it is safe to print; nil if unset.
func (c *Cluster) BootstrapServers() []string {
	p := c.clientProps(RoleAdmin)["bootstrap.servers"]
	if p == nil {
		return nil
	}
	var out []string
	for _, s := range strings.Split(p.value, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, MaskServers(s))
		}
	}
	return out
}

func (c *Cluster) clientProps(role Role) map[string]*prop {
	m := map[string]*prop{}
	set := func(k string, e *entry, origin string) {
		m[k] = &prop{value: e.value, display: e.display(k), origin: origin, line: e.line}
	}
	top, own := c.cfg.top, c.cfg.byAlias[c.Alias]
	for _, k := range sortedKeys(top) {
		if isClientSecurityKey(k) {
			set(k, top[k], OriginTopLevel)
		}
	}
	for _, k := range sortedKeys(own) {
		if isClientSecurityKey(k) {
			set(k, own[k], OriginCluster)
		}
	}
	for _, k := range sortedKeys(top) {
		if _, known := knownKeys[k]; known {
			continue // consumer.poll.timeout.ms, admin.timeout.ms
		}
		if r, rest, ok := roleOf(k); ok && r == role {
			set(rest, top[k], OriginTopLevel)
		}
	}
	for _, k := range sortedKeys(own) {
		if r, rest, ok := roleOf(k); ok && r == role {
			set(rest, own[k], OriginCluster)
		}
	}
	return m
}

// Name returns "source->target", MM2's name for the flow.
func (f *Flow) Name() string { return f.Source + "->" + f.Target }

// String returns the effective value of a connector key (e.g. "topics",
// "offset-syncs.topic.location"), or its Kafka 4.0 default, or "" for a key
// that is neither set nor known. Enumerated keys (offset-syncs.topic.location,
// use.defaults.from, ...) are returned trimmed and lower-cased. The value is
// resolved: do not print it for sensitive keys.
func (f *Flow) String(key string) string {
	p := f.props[key]
	if p == nil {
		return ""
	}
	if ki, ok := knownKeys[key]; ok && ki.kind == kEnum {
		return strings.ToLower(strings.TrimSpace(p.value))
	}
	return p.value
}

// Int returns the effective value of an integer key (replication factors,
// offset.lag.max, tasks.max, *.interval.seconds, *.ms), or its default, or 0
// when the key is unknown or not an integer.
func (f *Flow) Int(key string) int64 {
	p := f.props[key]
	if p == nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(p.value), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// Bool returns the effective value of a boolean key (*.enabled), or its
// default; false when the key is unknown or not "true" (case-insensitive).
func (f *Flow) Bool(key string) bool {
	p := f.props[key]
	return p != nil && strings.EqualFold(strings.TrimSpace(p.value), "true")
}

// Duration returns Int(key) as a duration whose unit comes from the key's
// suffix: seconds for *.seconds keys (emit.checkpoints.interval.seconds),
// milliseconds for *.ms keys (admin.timeout.ms, offset.flush.interval.ms).
// It returns 0 for any other key. MM2 treats a negative interval as
// "disabled"; the negative duration is returned as is.
func (f *Flow) Duration(key string) time.Duration {
	switch {
	case strings.HasSuffix(key, ".seconds"):
		return time.Duration(f.Int(key)) * time.Second
	case strings.HasSuffix(key, ".ms"):
		return time.Duration(f.Int(key)) * time.Millisecond
	}
	return 0
}

// Policy returns the flow's ReplicationPolicy, built with policy.FromProps
// from the flow's replication.policy.* settings and source.cluster.alias =
// Source (which IdentityReplicationPolicy needs, as inside MM2's connectors).
func (f *Flow) Policy() policy.Policy { return f.policy }

// TopicFilter returns the flow's topic filter (topics, topics.exclude;
// topics.blacklist as a deprecated alias).
func (f *Flow) TopicFilter() filter.TopicFilter { return f.topics }

// GroupFilter returns the flow's group filter (groups, groups.exclude).
func (f *Flow) GroupFilter() filter.GroupFilter { return f.groups }

// ConfigPropertyFilter returns the flow's topic-config filter
// (config.properties.exclude).
func (f *Flow) ConfigPropertyFilter() filter.ConfigPropertyFilter { return f.cprops }

// Settings returns the flow's effective connector and worker settings, with
// their origins, sorted by key, for `config show`. Every known key is
// present (at its default when unset), plus enabled, source.cluster.alias,
// target.cluster.alias and any other key set as Source->Target.<key>.
// Values are printable (see Setting).
func (f *Flow) Settings() []Setting { return settings(f.file, f.props) }

func settings(file string, m map[string]*prop) []Setting {
	out := make([]Setting, 0, len(m))
	for _, k := range sortedKeys(m) {
		p := m[k]
		s := Setting{Key: k, Value: p.display, Origin: p.origin, Line: p.line}
		if p.origin != OriginDefault {
			s.File = file
		}
		out = append(out, s)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// acknowledge moves the warnings whose key is listed in ack (the
// mirrorctl.warnings.acknowledged entry, nil when unset) out of ws. A listed
// key that draws no warning is warned about itself, so that a stale
// acknowledgement (the key fixed, or renamed) does not hide a later one.
func acknowledge(file string, ack *entry, ws []Warning) (kept, acked []Warning) {
	if ack == nil {
		return ws, nil
	}
	listed := map[string]bool{}
	for _, k := range strings.Split(ack.value, ",") {
		if k = strings.TrimSpace(k); k != "" {
			listed[k] = true
		}
	}
	used := map[string]bool{}
	for _, w := range ws {
		if listed[w.Key] {
			acked = append(acked, w)
			used[w.Key] = true
		} else {
			kept = append(kept, w)
		}
	}
	for _, k := range sortedKeys(listed) {
		if !used[k] {
			kept = append(kept, Warning{File: file, Line: ack.line, Key: KeyAcknowledged,
				Msg: fmt.Sprintf("%s draws no warning: remove it from the list, so that a warning it draws later is not hidden", k)})
		}
	}
	return sortWarnings(kept), acked
}
