// Package deploy holds no code: deploy/ carries example deployment files
// (Kubernetes manifests, a systemd unit, Prometheus rules) and its test
// checks that they parse and say what docs/deployment.md and
// docs/monitoring.md promise.
package deploy
