// Package archtest holds no code: its test checks the import direction the
// tree is built around (docs/architecture.md), so a change that breaks the
// layering fails `go test ./...` instead of drifting in unseen.
package archtest
