// Package kafka is mirrorctl's single client factory: the only package that
// builds franz-go clients. Its two key entry points are:
//
//   - Options, which maps one cluster's Java Kafka client properties
//     (bootstrap.servers, security.protocol, ssl.*, sasl.*, producer,
//     consumer and admin settings, as MM2 assembles them) to kgo options:
//     TLS and mutual TLS from PEM, JKS or PKCS12 stores, SASL PLAIN and
//     SCRAM-SHA-256/512 from sasl.jaas.config, timeouts and sizes.
//   - Factory, which looks up a cluster alias's properties per role
//     (consumer, producer, admin), builds *kgo.Client values with a kslog
//     logger, memoises one *kadm.Client per alias, and closes them all.
//
// Secrets (store and key passwords, the JAAS text, inline PEM keys) are held
// as config.Secret while parsed and never appear in errors, warnings or logs.
package kafka
