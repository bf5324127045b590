// Package config reads MirrorMaker 2's mm2.properties (MirrorMakerConfig,
// spec section 10) into a typed, validated Config.
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
// Not covered: the Connect worker settings beyond offset.flush.interval.ms
// and exactly.once.source.support are accepted but not typed; custom
// filter, policy and forwarding-admin classes are not loaded (a Warning, or
// an Error for replication.policy.class).
package config
