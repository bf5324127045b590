package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// loader holds the state of one Load.
type loader struct {
	file  string
	env   func(string) (string, bool)
	errs  []*Error
	warns []Warning
	notes []Warning

	aliases []string
	alias   map[string]bool
	cfg     *Config
	// flowKeys: [source, target] -> key without "A->B." -> entry
	flowKeys map[[2]string]map[string]*entry
	// patterns memoises compiled lists by (key, value): most flows share
	// the same (default) lists, and Patterns are immutable.
	patterns map[[2]string]compiled
}

func (l *loader) errorf(line int, key, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: l.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (l *loader) warnf(line int, key, format string, args ...any) {
	l.warns = append(l.warns, Warning{File: l.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// quote returns the value of e quoted for an error message when that is
// safe (the key is not sensitive, the value did not come from a provider and
// is short), else "the value".
func quote(k string, e *entry) string {
	if IsSensitive(k) || e.ref || len(e.value) > 60 {
		return "the value"
	}
	return strconv.Quote(strings.TrimSpace(e.value))
}

func (l *loader) load(text string) *Config {
	raw, perrs, pwarns := parseEntries(l.file, text)
	l.errs = append(l.errs, perrs...)
	l.warns = append(l.warns, pwarns...)

	// Later keys replace earlier ones, as in java.util.Properties.
	entries := map[string]*entry{}
	var order []string
	for _, r := range raw {
		if prev, ok := entries[r.key]; ok {
			l.warnf(r.line, r.key, "set again (first on line %d); this line wins", prev.line)
		} else {
			order = append(order, r.key)
		}
		entries[r.key] = &entry{key: r.key, raw: r.value, value: r.value, line: r.line}
	}

	res := l.providers(entries)
	for _, k := range order {
		e := entries[k]
		if strings.HasPrefix(k, "config.providers") {
			continue
		}
		v, used, err := res.resolve(rawEntry{key: k, value: e.raw, line: e.line})
		if err != nil {
			l.errs = append(l.errs, err)
			continue
		}
		e.value, e.ref = v, used
	}

	ce, ok := entries["clusters"]
	if !ok {
		l.errorf(0, "clusters", "required key is missing: list the cluster aliases, e.g. clusters = us-east, eu-west")
		return nil
	}
	l.alias = map[string]bool{}
	for _, a := range filter.ParseList(ce.value) {
		switch {
		case a == "":
			l.errorf(ce.line, "clusters", "empty cluster alias in the list")
		case strings.Contains(a, "->"):
			l.errorf(ce.line, "clusters", "alias %q contains \"->\", which separates aliases in flow keys", a)
		case l.alias[a]:
			l.warnf(ce.line, "clusters", "alias %q is listed twice", a)
		default:
			l.alias[a] = true
			l.aliases = append(l.aliases, a)
		}
	}
	if strings.TrimSpace(ce.value) == "" {
		l.errorf(ce.line, "clusters", "no cluster aliases listed")
	}

	cfg := &Config{
		File:     l.file,
		Clusters: l.aliases,
		clusters: map[string]*Cluster{},
		top:      map[string]*entry{},
		byAlias:  map[string]map[string]*entry{},
	}
	l.cfg = cfg
	l.flowKeys = map[[2]string]map[string]*entry{}
	for _, a := range l.aliases {
		cfg.clusters[a] = &Cluster{Alias: a, Line: ce.line, cfg: cfg}
		cfg.byAlias[a] = map[string]*entry{}
	}

	for _, k := range order {
		e := entries[k]
		switch {
		case k == "clusters" || strings.HasPrefix(k, "config.providers"):
		case strings.Contains(k, "->"):
			l.classifyFlow(e)
		default:
			if a, rest, ok := l.clusterKey(k); ok {
				cfg.byAlias[a][rest] = e
				l.checkCluster(a, rest, e)
			} else {
				cfg.top[k] = e
				l.checkTop(k, e)
			}
		}
	}

	l.buildFlows()
	l.checkSeparators(ce)
	l.checkIdentityLoops()
	return cfg
}

// providers reads config.providers and config.providers.<name>.*.
func (l *loader) providers(entries map[string]*entry) *resolver {
	res := &resolver{file: l.file, env: l.env, providers: map[string]*provider{}}
	declared := map[string]bool{}
	if pe, ok := entries["config.providers"]; ok {
		for _, name := range filter.ParseList(pe.raw) {
			if name == "" {
				continue
			}
			declared[name] = true
			ck := "config.providers." + name + ".class"
			ce, ok := entries[ck]
			if !ok {
				l.errorf(pe.line, ck, "provider %q is declared but has no class", name)
				continue
			}
			switch cls := strings.TrimSpace(ce.raw); cls {
			case classEnvProvider, classFileProvider, classDirectoryProvider:
				res.providers[name] = &provider{name: name, class: cls, line: ce.line, params: map[string]string{}}
			default:
				l.errorf(ce.line, ck, "unsupported config provider class; mirrorctl supports %s, %s and %s", classEnvProvider, classFileProvider, classDirectoryProvider)
			}
		}
	}
	for k, e := range entries {
		rest, ok := strings.CutPrefix(k, "config.providers.")
		if !ok {
			continue
		}
		name, sub, _ := strings.Cut(rest, ".")
		switch {
		case !declared[name]:
			l.warnf(e.line, k, "provider %q is not listed in config.providers; ignored", name)
		case sub == "class":
		case strings.HasPrefix(sub, "param."):
			if p := res.providers[name]; p != nil {
				p.params[strings.TrimPrefix(sub, "param.")] = e.raw
			}
		default:
			l.warnf(e.line, k, "unknown config provider setting; did you mean config.providers.%s.class or config.providers.%s.param.<name>?", name, name)
		}
	}
	if _, ok := entries["config.providers"]; !ok {
		for k, e := range entries {
			if k != "config.providers" && strings.HasPrefix(k, "config.provider") && !strings.HasPrefix(k, "config.providers.") {
				l.warnf(e.line, k, "unknown key; did you mean config.providers?")
			}
		}
	}
	return res
}

// clusterKey splits "A.key" for a declared alias A (the longest that fits).
func (l *loader) clusterKey(k string) (alias, rest string, ok bool) {
	for _, a := range l.aliases {
		if r, found := strings.CutPrefix(k, a+"."); found && r != "" && len(a) > len(alias) {
			alias, rest, ok = a, r, true
		}
	}
	return
}

// classifyFlow files an "A->B.key" entry under its flow, or reports the
// unknown alias or self-flow it names.
func (l *loader) classifyFlow(e *entry) {
	i := strings.Index(e.key, "->")
	src, after := e.key[:i], e.key[i+2:]
	tgt, rest := "", ""
	for _, a := range l.aliases {
		if r, ok := strings.CutPrefix(after, a+"."); ok && len(a) > len(tgt) {
			tgt, rest = a, r
		} else if after == a && len(a) > len(tgt) {
			tgt, rest = a, ""
		}
	}
	if tgt == "" {
		tgt, _, _ = strings.Cut(after, ".")
	}
	var unknown []string
	if !l.alias[src] {
		unknown = append(unknown, strconv.Quote(src))
	}
	if !l.alias[tgt] {
		unknown = append(unknown, strconv.Quote(tgt))
	}
	if len(unknown) > 0 {
		l.errorf(e.line, e.key, "flow %s->%s names unknown cluster alias %s (clusters = %s)%s",
			src, tgt, strings.Join(unknown, " and "), strings.Join(l.aliases, ", "), l.aliasHint(src, tgt))
		return
	}
	if src == tgt {
		l.errorf(e.line, e.key, "flow from cluster %q to itself; a flow needs two distinct clusters", src)
		return
	}
	if rest == "" {
		l.warnf(e.line, e.key, "flow key without a setting name; ignored (e.g. %s->%s.enabled)", src, tgt)
		return
	}
	fk := [2]string{src, tgt}
	if l.flowKeys[fk] == nil {
		l.flowKeys[fk] = map[string]*entry{}
	}
	l.flowKeys[fk][rest] = e
	l.checkFlow(src, tgt, rest, e)
}

// misspelt reports an unknown key e that looks like the known key want
// (written out in full): an error when it is a near miss (see suggestKey),
// else a warning.
func (l *loader) misspelt(e *entry, near bool, want string) {
	if near {
		l.errorf(e.line, e.key, "unknown key, meant as %q? Correct or remove it: as written, %s keeps its default", want, want)
		return
	}
	l.warnf(e.line, e.key, "unknown key; did you mean %q?", want)
}

// aliasHint suggests a declared alias for unknown ones.
func (l *loader) aliasHint(names ...string) string {
	for _, n := range names {
		if l.alias[n] {
			continue
		}
		if s := suggestAlias(n, l.aliases); s != "" {
			return fmt.Sprintf("; did you mean %q?", s)
		}
	}
	return ""
}

func (l *loader) unknown(e *entry, cands []string) {
	if s, near := suggestKey(e.key, cands); s != "" {
		l.misspelt(e, near, s)
		return
	}
	l.warnf(e.line, e.key, "unknown key; MM2 and mirrorctl ignore it")
}

// checkTop checks a top-level key and its value.
func (l *loader) checkTop(k string, e *entry) {
	if ki, ok := knownKeys[k]; ok {
		switch k {
		case "enabled":
			l.warnf(e.line, k, "a top-level enabled is ignored; enable a flow with A->B.enabled = true")
			return
		case "source.cluster.alias", "target.cluster.alias":
			l.warnf(e.line, k, "set by MM2 from each flow's aliases; ignored here")
			return
		}
		l.checkValue(k, ki, e)
		return
	}
	if nk, ok := deprecatedKeys[k]; ok {
		l.warnf(e.line, k, "deprecated alias of %s (KIP-629; removed in Kafka 4.0); rename it. When both are set, %s wins", nk, nk)
		l.checkValue(k, knownKeys[nk], e)
		return
	}
	switch {
	case isClientSecurityKey(k):
		l.checkSecurityKey(k, e)
		return
	case strings.HasPrefix(k, policyPrefix):
		l.checkPolicyKey("", k, e)
		return
	case isWorkerKey(k):
		l.checkWorkerKey(k, e)
		return
	}
	if r, rest, ok := roleOf(k); ok {
		l.checkRoleKey(r, rest, e)
		return
	}
	if instead, ok := connectorKeyInstead(k); ok {
		l.warnf(e.line, k, "a Connect connector setting MM2 applies, accepted but not acted on: %s", instead)
		return
	}
	if genericSet[k] {
		l.warnf(e.line, k, "MM2 does not pass top-level %s to clients; use consumer.%s, producer.%s or admin.%s (or A.consumer.%s for one cluster)", k, k, k, k, k)
		return
	}
	if isSideRoleKey(k) {
		l.warnf(e.line, k, "per-side client override; mirrorctl ignores it. Use A.consumer.*, A.producer.* or A.admin.* for cluster A")
		return
	}
	// "useast.bootstrap.servers": a cluster key for an undeclared alias?
	if p, rest, ok := strings.Cut(k, "."); ok && isClusterLevelKey(rest) && !isClusterLevelKey(k) {
		l.warnf(e.line, k, "%q is not a declared cluster alias (clusters = %s)%s; ignored", p, strings.Join(l.aliases, ", "), l.aliasHint(p))
		return
	}
	l.unknown(e, candidates("top"))
}

const policyPrefix = "replication.policy."

// isSideRoleKey reports source.consumer.*, target.admin.*, ... keys.
func isSideRoleKey(k string) bool {
	for _, side := range []string{"source.", "target."} {
		if rest, ok := strings.CutPrefix(k, side); ok {
			if _, _, ok := roleOf(rest); ok {
				return true
			}
		}
	}
	return false
}

// isClusterLevelKey reports whether k is meaningful as A.<k>.
func isClusterLevelKey(k string) bool {
	if isClientSecurityKey(k) || isWorkerKey(k) {
		return true
	}
	_, _, ok := roleOf(k)
	return ok
}

// checkSecurityKey warns about ssl.*/sasl.* names Kafka does not define,
// and about credentials written into a bootstrap.servers entry.
func (l *loader) checkSecurityKey(k string, e *entry) {
	if k == "bootstrap.servers" {
		for _, s := range strings.Split(e.value, ",") {
			if _, ui := SeedAddress(s); ui {
				l.warnf(e.line, e.key, "an entry carries credentials before '@' (%s): Kafka's clients ignore them there, and so does mirrorctl; authenticate with sasl.jaas.config, and treat the password as exposed if this file was shared",
					MaskServers(strings.TrimSpace(s)))
				break
			}
		}
		return
	}
	if !(strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.")) || isKnownSecurityKey(k) {
		return
	}
	if s, near := suggestKey(k, append(slices.Clone(sslKeys), saslKeys...)); s != "" {
		if near {
			l.errorf(e.line, e.key, "unknown client key %s, meant as %q? Correct or remove it: as written, %s is not set", k, s, s)
			return
		}
		l.warnf(e.line, e.key, "unknown client key %s; did you mean %q?", k, s)
		return
	}
	l.warnf(e.line, e.key, "unknown client key %s; passed to the Kafka client as is", k)
}

// checkCluster checks an A.<k> key.
func (l *loader) checkCluster(a, k string, e *entry) {
	switch {
	case isClientSecurityKey(k):
		l.checkSecurityKey(k, e)
		return
	case isWorkerKey(k):
		if ki, ok := knownKeys[k]; ok {
			l.checkValue(k, ki, e)
		} else {
			l.checkWorkerKey(k, e)
		}
		return
	}
	if r, rest, ok := roleOf(k); ok {
		l.checkRoleKey(r, rest, e)
		return
	}
	if ki, ok := knownKeys[k]; ok && ki.scope == scopeConnector {
		l.warnf(e.line, e.key, "%s is a flow setting; MM2 ignores it at cluster level. Set it at the top level or as %s->B.%s", k, a, k)
		return
	}
	if _, ok := deprecatedKeys[k]; ok {
		l.warnf(e.line, e.key, "%s is a flow setting; MM2 ignores it at cluster level", k)
		return
	}
	if genericSet[k] {
		l.warnf(e.line, e.key, "MM2 passes only bootstrap.servers, security.protocol, ssl.* and sasl.* from cluster settings to clients, so this is ignored; use %s.consumer.%s, %s.producer.%s or %s.admin.%s", a, k, a, k, a, k)
		return
	}
	if strings.HasPrefix(k, "config.providers") {
		l.warnf(e.line, e.key, "config providers are declared at the top level only; ignored")
		return
	}
	if s, near := suggestKey(k, candidates("cluster")); s != "" {
		l.misspelt(e, near, a+"."+s)
		return
	}
	l.warnf(e.line, e.key, "unknown cluster setting; MM2 and mirrorctl ignore it")
}

// checkFlow checks an A->B.<k> key.
func (l *loader) checkFlow(src, tgt, k string, e *entry) {
	if ki, ok := knownKeys[k]; ok {
		switch {
		case k == "source.cluster.alias" || k == "target.cluster.alias":
			l.warnf(e.line, e.key, "set from the flow's aliases; ignored")
		case ki.scope == scopeWorker:
			l.warnf(e.line, e.key, "a Connect worker setting; a flow's worker is configured from its target cluster, so set %s.%s instead. Ignored", tgt, k)
		case ki.scope == scopeTop:
			l.warnf(e.line, e.key, "a top-level setting; ignored per flow")
		default:
			l.checkValue(k, ki, e)
		}
		return
	}
	if nk, ok := deprecatedKeys[k]; ok {
		l.warnf(e.line, e.key, "deprecated alias of %s (KIP-629; removed in Kafka 4.0); rename it. When %s is also set (here or at the top level), %s wins", nk, nk, nk)
		l.checkValue(k, knownKeys[nk], e)
		return
	}
	if strings.HasPrefix(k, policyPrefix) {
		l.checkPolicyKey(src+"->"+tgt+".", k, e)
		return
	}
	_, _, isRole := roleOf(k)
	if isClientSecurityKey(k) || isRole || isSideRoleKey(k) || genericSet[k] {
		l.warnf(e.line, e.key, "client overrides per flow are ignored by mirrorctl; set them per cluster (%s.%s or %s.consumer.*, %s.producer.*, %s.admin.*)", src, k, src, tgt, tgt)
		return
	}
	if isWorkerKey(k) {
		instead, _ := workerKeyInstead(k, strings.TrimSpace(e.value))
		l.warnf(e.line, e.key, "a Connect worker setting (MM2 reads it as %s.%s, never per flow), not acted on: %s", tgt, k, instead)
		return
	}
	if instead, ok := connectorKeyInstead(k); ok {
		l.warnf(e.line, e.key, "a Connect connector setting MM2 applies, accepted but not acted on: %s", instead)
		return
	}
	if s, near := suggestKey(k, candidates("flow")); s != "" {
		l.misspelt(e, near, src+"->"+tgt+"."+s)
		return
	}
	l.warnf(e.line, e.key, "unknown flow setting; MM2 passes it to the connectors, mirrorctl ignores it")
}

// checkValue validates the value of a known key k (written as e.key).
func (l *loader) checkValue(k string, ki keyInfo, e *entry) {
	v := strings.TrimSpace(e.value)
	nerrs := len(l.errs)
	switch ki.kind {
	case kBool:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			l.errorf(e.line, e.key, "%s is not a boolean (want true or false)", quote(k, e))
		}
	case kInt:
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			l.errorf(e.line, e.key, "%s is not an integer", quote(k, e))
		case ki.hasMin && n < ki.min:
			l.errorf(e.line, e.key, "%d is below the minimum %d", n, ki.min)
		case ki.hasMin && ki.min == -1 && n == 0:
			l.errorf(e.line, e.key, "replication factor 0 is invalid (use -1 for the broker default, or >= 1)")
		default:
			l.checkInterval(k, e, n)
		}
	case kEnum:
		if !slices.Contains(ki.enum, strings.ToLower(v)) {
			l.errorf(e.line, e.key, "%s is not one of %s", quote(k, e), strings.Join(ki.enum, ", "))
		}
	case kList:
		canon := k
		if nk, ok := deprecatedKeys[k]; ok {
			canon = nk
		}
		if _, err := l.compileList(canon, e.value); err != nil {
			l.errorf(e.line, e.key, "%s", patternMsg(err, e.ref))
		}
	case kClass:
		l.checkClass(k, ki, e, v)
	case kString:
		if k == policy.KeySeparator && e.value == "" {
			l.errorf(e.line, e.key, "must not be empty")
		}
	}
	if len(l.errs) == nerrs && k == KeyExactlyOnce && strings.EqualFold(v, "preparing") {
		l.errorf(e.line, e.key, "\"preparing\" is the first step of a Connect cluster's rolling upgrade to exactly-once "+
			"(KIP-618); mirrorctl has no Connect workers to prepare. Set enabled (copies and progress commit in one "+
			"transaction on the target) or disabled (at least once)")
	}
	if len(l.errs) == nerrs {
		l.checkActedOn(k, e, v)
	}
}

// checkRoleKey checks a client role key (producer.transactional.id, ...;
// rest without the role prefix) written as e.key.
func (l *loader) checkRoleKey(r Role, rest string, e *entry) {
	if d, ok := differsRoleKeys[rest]; ok && r == RoleConsumer {
		l.notef(e.line, e.key, "%s", d)
	}
	if r == RoleProducer && rest == "transactional.id" {
		l.errorf(e.line, e.key, "mirrorctl sets the transactional ids of its producers itself (one per partition "+
			"with %s = enabled, none otherwise); a transactional.id shared by every producer of the cluster "+
			"cannot work: remove it", KeyExactlyOnce)
		return
	}
	l.checkSecurityKey(rest, e)
}

func (l *loader) checkClass(k string, ki keyInfo, e *entry, v string) {
	if k == policy.KeyClass {
		switch v {
		case policy.ClassDefault, policy.ClassIdentity, "":
		case "DefaultReplicationPolicy", "IdentityReplicationPolicy":
			l.warnf(e.line, e.key, "MM2 needs the fully qualified class name org.apache.kafka.connect.mirror.%s", v)
		default:
			l.errorf(e.line, e.key, "unknown replication policy %s; mirrorctl supports %s and %s", quote(k, e), policy.ClassDefault, policy.ClassIdentity)
		}
		return
	}
	if v != "" && v != ki.def && v != ki.def[strings.LastIndex(ki.def, ".")+1:] {
		l.warnf(e.line, e.key, "custom classes are not supported; mirrorctl behaves as %s", ki.def)
	}
}

// checkSeparators reports aliases that contain the replication separator:
// remote topic names (alias + separator + topic) would be ambiguous.
func (l *loader) checkSeparators(ce *entry) {
	seps := map[string]bool{policy.DefaultSeparator: true}
	if e, ok := l.cfg.top[policy.KeySeparator]; ok {
		seps = map[string]bool{e.value: true}
	}
	for _, f := range l.cfg.Flows {
		if p := f.props[policy.KeySeparator]; p != nil && p.origin == OriginFlow {
			if e := l.flowKeys[[2]string{f.Source, f.Target}][policy.KeySeparator]; e != nil {
				for _, a := range []string{f.Source, f.Target} {
					if p.value != "" && strings.Contains(a, p.value) {
						l.errorf(e.line, e.key, "cluster alias %q contains this flow's replication separator %q; remote topic names would be ambiguous", a, p.value)
					}
				}
			}
		}
	}
	for _, a := range l.aliases {
		for s := range seps {
			if s != "" && strings.Contains(a, s) {
				l.errorf(ce.line, "clusters", "alias %q contains the replication separator %q (replication.policy.separator); remote topic names would be ambiguous", a, s)
			}
		}
	}
}

// buildFlows creates every ordered pair of aliases with its effective
// settings, policy and filters.
func (l *loader) buildFlows() {
	cfg := l.cfg
	for _, s := range l.aliases {
		for _, t := range l.aliases {
			if s != t {
				cfg.Flows = append(cfg.Flows, l.buildFlow(s, t))
			}
		}
	}
	slices.SortFunc(cfg.Flows, func(a, b *Flow) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Target, b.Target)
	})
}

func (l *loader) buildFlow(s, t string) *Flow {
	cfg := l.cfg
	f := &Flow{Source: s, Target: t, file: l.file, props: map[string]*prop{}}
	for k, ki := range knownKeys {
		if ki.scope != scopeTop {
			f.props[k] = &prop{value: ki.def, display: ki.def, origin: OriginDefault}
		}
	}
	set := func(k string, e *entry, origin string) {
		f.props[k] = &prop{value: e.value, display: e.display(k), origin: origin, line: e.line}
	}
	for k, e := range cfg.top {
		ki, known := knownKeys[k]
		_, deprecated := deprecatedKeys[k]
		switch {
		case known && ki.scope != scopeTop && k != "enabled" && k != "source.cluster.alias" && k != "target.cluster.alias",
			deprecated, strings.HasPrefix(k, policyPrefix):
			set(k, e, OriginTopLevel)
		}
	}
	fk := l.flowKeys[[2]string{s, t}]
	for k, e := range fk {
		ki, known := knownKeys[k]
		_, _, isRole := roleOf(k)
		switch {
		case k == "source.cluster.alias" || k == "target.cluster.alias":
		case known && ki.scope != scopeConnector:
		case isClientSecurityKey(k) || isRole || isSideRoleKey(k) || genericSet[k]:
		case !known && isWorkerKey(k):
		default:
			set(k, e, OriginFlow)
		}
	}
	// Worker settings come from the target cluster (B.<key>).
	for k, e := range cfg.byAlias[t] {
		if ki, ok := knownKeys[k]; ok && ki.scope == scopeWorker {
			set(k, e, OriginCluster)
		}
	}
	// KIP-629 aliases, translated on the merged config: the new name wins.
	for old, nk := range deprecatedKeys {
		op := f.props[old]
		if op == nil {
			continue
		}
		delete(f.props, old)
		if f.props[nk].origin == OriginDefault {
			f.props[nk] = op
		}
	}
	if p := f.props[KeyGroupID]; p == nil || p.origin == OriginDefault {
		// replicate.DefaultGroupID; config imports no engine.
		g := "mirrorctl-" + s + "-" + t
		f.props[KeyGroupID] = &prop{value: g, display: g, origin: OriginDefault}
	}
	// MM2's dedicated-mode names for the flow (MirrorMakerConfig.workerConfig):
	// its Connect offsets topic and worker group, which the MM2 takeover
	// reads; mirrorctl.mm2.* override them for a Connect cluster.
	perFlowDefault := func(key, v string) {
		if p := f.props[key]; p == nil || p.origin == OriginDefault {
			f.props[key] = &prop{value: v, display: v, origin: OriginDefault}
		}
	}
	perFlowDefault("offset.storage.topic", "mm2-offsets."+s+".internal")
	perFlowDefault(KeyMM2OffsetsTopic, f.props["offset.storage.topic"].value)
	perFlowDefault(KeyMM2ConnectGroup, s+"-mm2")
	f.props["source.cluster.alias"] = &prop{value: s, display: s, origin: OriginDefault}
	f.props["target.cluster.alias"] = &prop{value: t, display: t, origin: OriginDefault}
	if e := fk["enabled"]; e != nil {
		f.Line = e.line
	}
	f.Enabled = f.Bool("enabled")

	// Policy: only the explicitly set replication.policy.* keys, so that
	// the KIP-949 flag is read only when the separator is set, as in MM2.
	pp := map[string]string{policy.KeySourceAlias: s}
	for k, p := range f.props {
		if strings.HasPrefix(k, policyPrefix) && p.origin != OriginDefault {
			pp[k] = p.value
		}
	}
	pol, err := policy.FromProps(pp)
	if err != nil && !slices.ContainsFunc(l.errs, func(e *Error) bool { return strings.Contains(e.Key, policyPrefix) }) {
		// Per-key problems were reported by checkValue; report the rest
		// at the flow.
		line, key := l.propPlace(f, policy.KeyClass)
		l.errs = append(l.errs, &Error{File: l.file, Line: line, Key: key, Msg: "replication policy: " + err.Error(), Err: err})
	}
	if err != nil {
		pol = policy.NewDefault(policy.DefaultSeparator, true)
	}
	f.policy = pol
	f.topics = filter.TopicFilter{Include: l.compile(f, "topics"), Exclude: l.compile(f, "topics.exclude")}
	f.groups = filter.GroupFilter{Include: l.compile(f, "groups"), Exclude: l.compile(f, "groups.exclude")}
	f.cprops = filter.ConfigPropertyFilter{Exclude: l.compile(f, "config.properties.exclude")}

	if f.Enabled {
		for _, side := range []struct{ role, alias string }{{"source", s}, {"target", t}} {
			if len(cfg.clusters[side.alias].BootstrapServers()) == 0 {
				l.errorf(f.Line, f.Name()+".enabled", "%s cluster %s has no bootstrap.servers (set %s.bootstrap.servers)", side.role, side.alias, side.alias)
			}
		}
	}
	l.checkReverseCheckpoints(f)
	l.checkACLPrune(f)
	return f
}

// checkACLPrune warns about sync.topic.acls.prune = true where it cannot be
// acted on: a flow that is not enabled (set for that flow), or one whose
// ACL sync is off (nothing is created, so nothing is pruned).
func (l *loader) checkACLPrune(f *Flow) {
	p := f.props[KeySyncTopicACLsPrune]
	if p == nil || p.origin == OriginDefault || !f.Bool(KeySyncTopicACLsPrune) {
		return
	}
	line, key := l.propPlace(f, KeySyncTopicACLsPrune)
	switch {
	case !f.Enabled && p.origin == OriginFlow:
		l.warnf(line, key, "accepted but not acted on: the flow %s is not enabled, so it syncs no ACLs and prunes none", f.Name())
	case f.Enabled && !f.Bool("sync.topic.acls.enabled"):
		l.warnf(line, key, "not acted on with sync.topic.acls.enabled = false for %s: only the ACL sync prunes the bindings it created", f.Name())
	}
}

// checkReverseCheckpoints warns about mirrorctl.reverse.checkpoints.enabled
// = true where it cannot be acted on: a flow that is not enabled (set for
// that flow), or one without checkpoints (replicate refuses it).
func (l *loader) checkReverseCheckpoints(f *Flow) {
	p := f.props[KeyReverseCheckpoints]
	if p == nil || p.origin == OriginDefault || !f.Bool(KeyReverseCheckpoints) {
		return
	}
	line, key := l.propPlace(f, KeyReverseCheckpoints)
	switch {
	case !f.Enabled && p.origin == OriginFlow:
		l.warnf(line, key, "accepted but not acted on: the flow %s is not enabled, so nothing emits its reverse checkpoints", f.Name())
	case f.Enabled && !f.Bool("emit.checkpoints.enabled"):
		l.warnf(line, key, "not acted on with emit.checkpoints.enabled = false for %s: reverse checkpoints are emitted with the checkpoints, and mirrorctl replicate refuses the flow", f.Name())
	}
}

// propPlace returns the line and written key of a flow setting, for errors.
func (l *loader) propPlace(f *Flow, k string) (int, string) {
	p := f.props[k]
	switch {
	case p == nil || p.origin == OriginDefault:
		return f.Line, f.Name() + ".enabled"
	case p.origin == OriginFlow:
		return p.line, f.Name() + "." + k
	}
	return p.line, k
}

// compile returns the flow's compiled list for k; problems were reported by
// checkValue at the line that set it, so failures here yield a nil pattern.
func (l *loader) compile(f *Flow, k string) *filter.Pattern {
	p, _ := l.compileList(k, f.props[k].value)
	return p
}

type compiled struct {
	p   *filter.Pattern
	err error
}

// defaultPatterns holds the compiled spec defaults of the list keys, shared
// by every Load (Patterns are immutable).
var defaultPatterns = sync.OnceValue(func() map[string]*filter.Pattern {
	m := map[string]*filter.Pattern{}
	for k, ki := range knownKeys {
		if ki.kind == kList {
			m[k] = filter.MustCompileList(k, ki.def)
		}
	}
	return m
})

// compileList compiles a regex list for key k (a canonical name such as
// topics.exclude), memoised by (k, value): flows mostly share lists.
func (l *loader) compileList(k, value string) (*filter.Pattern, error) {
	if value == knownKeys[k].def {
		if p, ok := defaultPatterns()[k]; ok {
			return p, nil
		}
	}
	mk := [2]string{k, value}
	if c, ok := l.patterns[mk]; ok {
		return c.p, c.err
	}
	p, err := filter.CompileList(k, value)
	if l.patterns == nil {
		l.patterns = map[[2]string]compiled{}
	}
	l.patterns[mk] = compiled{p, err}
	return p, err
}

// patternMsg describes a filter.CompileList error without repeating the key
// (the Error already names it). For a provider-resolved list the offending
// item is not quoted.
func patternMsg(err error, ref bool) string {
	var pe *filter.PatternError
	if !errors.As(err, &pe) {
		return "invalid regex list"
	}
	if ref {
		return "invalid regex list (it comes from a config provider, so it is not shown)"
	}
	var b strings.Builder
	if pe.Item != "" {
		fmt.Fprintf(&b, "invalid regex item %q: %v", pe.Item, pe.Err)
	} else {
		fmt.Fprintf(&b, "invalid regex list: %v", pe.Err)
	}
	if pe.Hint != "" {
		b.WriteString(" (hint: " + pe.Hint + ")")
	}
	return b.String()
}
