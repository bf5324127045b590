// Package buildinfo holds mirrorctl's version and commit. It is a leaf package:
// engines and the CLI may import it, it imports nothing of the project.
package buildinfo

import "runtime/debug"

// Version and Commit are set at link time with
// -ldflags "-X github.com/mirrorctl/mirrorctl/internal/buildinfo.Version=v1.2.3".
// When unset, Version falls back to the module version recorded by the Go
// toolchain, or "dev".
var (
	Version = ""
	Commit  = ""
)

// String returns the version, e.g. "v0.1.0" or "dev".
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// ClientID is the Kafka client.id mirrorctl stamps on every connection,
// "mirrorctl/<version>", so brokers' request logs show the tool.
func ClientID() string { return "mirrorctl/" + String() }
