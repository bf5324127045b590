// Package itest holds mirrorctl's integration tests against real Apache Kafka
// brokers and a real MirrorMaker 2, built with the "kafka" tag:
//
//	make test-kafka    # scripts/test-kafka.sh: install, up, go test -tags kafka, down
//
// The tests read the MIRRORCTL_KAFKA_* variables printed by
// `scripts/kafka.sh up` (two single-node KRaft clusters, us-east on
// 127.0.0.1:19092 and eu-west on 127.0.0.1:29092, each with a SASL_SSL
// listener) and fail, never skip, when they are missing. Each test uses topic
// and group names with a unique suffix, and every wait has a deadline.
package itest
