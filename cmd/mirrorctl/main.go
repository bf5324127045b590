// Command mirrorctl replicates Kafka topics between clusters the way
// MirrorMaker 2 does, and plans, applies and verifies consumer-group failover.
package main

import (
	"os"

	"github.com/mirrorctl/mirrorctl/internal/cli"
)

func main() { os.Exit(cli.Main()) }
