// Package config reads MirrorMaker 2's mm2.properties (MirrorMakerConfig,
// docs/mm2-formats.md §10) into a typed, validated Config.
//
// The key types are:
//   - Config: the `clusters` aliases, every Flow between them and the
//     Warnings found (unknown or misspelt keys with a suggestion, settings
//     ignored where they were written, KIP-629 deprecated aliases).
//   - Cluster: one alias; ClientProps assembles its Kafka client properties
//     per Role as MM2 does.
//   - Flow: one direction A->B, with MM2's precedence (defaults < top-level
//     < A->B.* overrides), typed getters, its ReplicationPolicy and filters.
//   - Error: one problem at file:line:key. Load returns all of them,
//     errors.Join-ed.
//
// Syntax is java.util.Properties (parsed with magiconair/properties, whose
// own ${} expansion is disabled; line numbers come from a pre-scan of
// logical lines). Like Java, a backslash before a character that is not an
// escape is dropped, so `topics = cart\..*` reaches MM2 as `cart..*`; a
// Warning points this out. ${provider:[path:]key} references are resolved
// in memory by the providers declared in config.providers.
//
// Secrets: no Error, Warning, Setting or Digest ever contains a secret
// value. Values of keys for which IsSensitive is true print as
// "**redacted**", and values obtained from a config provider are shown as
// their ${...} reference. Only ClientProps and the Flow getters return raw
// values, for handing to client libraries.
//
// Accepted means acted on: a key MM2 or Connect defines that mirrorctl
// accepts but does not act on draws a Warning naming it, where it is set and
// what mirrorctl does instead (actedon.go; the user-facing list is
// docs/config-keys.md). That covers the MM2 keys without an engine
// counterpart (refresh.groups.*, consumer.poll.timeout.ms, admin.timeout.ms,
// metric.reporters, ...), values the engine does not have
// (exactly.once.source.support = enabled, custom filter and forwarding-admin
// classes, non-positive intervals), the untyped Connect worker keys
// (converters, *.storage.*, task*, worker*), Connect's transforms,
// predicates and errors.* keys, and replication.policy.* keys the built-in
// policies do not read. A custom replication.policy.class is an Error.
package config
