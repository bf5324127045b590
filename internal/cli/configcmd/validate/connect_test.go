package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// connectOptions validates the file at path with --connect against clients,
// -o json.
func connectOptions(ios *iostreams.IOStreams, path string, clients replicate.Clients) *ValidateOptions {
	return &ValidateOptions{
		IO: ios, Output: func() output.Format { return output.FormatJSON }, ConfigPath: func() string { return path },
		Config:  func() (*config.Config, error) { return config.Load(path) },
		Clients: func() (replicate.Clients, error) { return clients, nil },
		Connect: true,
	}
}

// TestConnectRefusesAliasesOfOneCluster: with --connect, "us-east-again"
// naming the us-east cluster again is an error at the clusters line naming
// both aliases (exit 2 through config.Error); an alias that does not answer
// is a warning; without --connect nothing is sent and the file is valid.
func TestConnectRefusesAliasesOfOneCluster(t *testing.T) {
	p := testkit.NewPair(t)
	east := strings.Join(p.Addrs(testkit.East), ",")
	path := filepath.Join(t.TempDir(), "mm2.properties")
	props := fmt.Sprintf(`clusters = us-east, us-east-again, eu-west
us-east.bootstrap.servers = %[1]s
us-east-again.bootstrap.servers = %[1]s
eu-west.bootstrap.servers = %[2]s
us-east->eu-west.enabled = true
`, east, strings.Join(p.Addrs(testkit.West), ","))
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	clients := testkit.NewClients(t, map[string][]string{
		testkit.East: p.Addrs(testkit.East), "us-east-again": p.Addrs(testkit.East), testkit.West: p.Addrs(testkit.West)})

	ios, _, out, _ := iostreams.Test()
	err := runValidate(context.Background(), connectOptions(ios, path, clients))
	var ce *config.Error
	if !errorsAs(err, &ce) || ce.Key != "clusters" || ce.Line != 1 {
		t.Fatalf("err = %v, want a config error at %s:1 key clusters", err, path)
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	if res.Valid || len(res.Problems) != 1 || res.Problems[0].Severity != "error" ||
		!strings.Contains(res.Problems[0].Message, `clusters "us-east" and "us-east-again" are one cluster`) {
		t.Errorf("result %+v, want one error naming both aliases", res)
	}

	// Without --connect nothing is sent: the file is valid.
	ios, _, _, _ = iostreams.Test()
	opts := connectOptions(ios, path, clients)
	opts.Connect = false
	if err := runValidate(context.Background(), opts); err != nil {
		t.Errorf("without --connect: %v", err)
	}
}

// TestConnectWarnsOfUnreachableCluster: distinct clusters pass --connect;
// one whose brokers do not answer is named in a warning, not an error.
func TestConnectWarnsOfUnreachableCluster(t *testing.T) {
	p := testkit.NewPair(t)
	path := filepath.Join(t.TempDir(), "mm2.properties")
	props := fmt.Sprintf(`clusters = us-east, eu-west
us-east.bootstrap.servers = %s
eu-west.bootstrap.servers = %s
us-east->eu-west.enabled = true
`, strings.Join(p.Addrs(testkit.East), ","), strings.Join(p.Addrs(testkit.West), ","))
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	ios, _, out, _ := iostreams.Test()
	clients := testkit.NewClients(t, map[string][]string{testkit.East: p.Addrs(testkit.East), testkit.West: p.Addrs(testkit.West)})
	if err := runValidate(context.Background(), connectOptions(ios, path, clients)); err != nil {
		t.Fatalf("distinct clusters: %v", err)
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || !res.Valid {
		t.Fatalf("result %s (%v), want valid", out, err)
	}
	p.West.Close()
	ios, _, out, _ = iostreams.Test()
	clients = testkit.NewClients(t, map[string][]string{testkit.East: p.Addrs(testkit.East), testkit.West: p.Addrs(testkit.West)})
	ctx, cancel := context.WithTimeout(context.Background(), 3e9)
	defer cancel()
	if err := runValidate(ctx, connectOptions(ios, path, clients)); err != nil {
		t.Fatalf("unreachable eu-west: %v", err)
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range res.Warnings {
		found = found || strings.Contains(w, "eu-west.bootstrap.servers: --connect: cluster eu-west not checked")
	}
	if !res.Valid || !found {
		t.Errorf("result %+v, want valid with a warning naming eu-west", res)
	}
}

func errorsAs(err error, target **config.Error) bool {
	for _, e := range unjoin(err) {
		if ce, ok := e.(*config.Error); ok {
			*target = ce
			return true
		}
	}
	return false
}
