package config

import (
	"sort"
	"strings"
)

// LiteralSecrets returns a Warning for every key whose value is a secret
// (IsSensitive) written literally in the file instead of through a config
// provider, so that `config validate` can suggest ${env:VAR} or
// ${file:/path:key} (Kafka's EnvVarConfigProvider and FileConfigProvider,
// KIP-297 and KIP-887). Empty values and keys that only name where a
// credential comes from (…credentials.source) are not reported. Sorted by
// line; values never appear.
func (c *Config) LiteralSecrets() []Warning {
	var out []Warning
	check := func(e *entry) {
		k := strings.ToLower(e.key)
		if e.ref || e.value == "" || !IsSensitive(e.key) || strings.HasSuffix(k, ".source") {
			return
		}
		out = append(out, Warning{File: c.File, Line: e.line, Key: e.key,
			Msg: "secret written in the file; reference it instead, e.g. ${env:VAR} or ${file:/path/to/secrets.properties:key} " +
				"(with config.providers = env, file), so it stays out of the file and its copies"})
	}
	for _, e := range c.top {
		check(e)
	}
	for _, m := range c.byAlias {
		for _, e := range m {
			check(e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Key < out[j].Key
	})
	return out
}
