package demo_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/cli/demo"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestDemoJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo") // --dir creates it, as README's `--dir ./demo` on a fresh clone
	ios, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := cli.Run(ctx, ios, []string{"demo", "--records", "200", "--dir", dir, "-o", "json"}, nil)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var res demo.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if !res.OK || res.SchemaVersion != 1 || len(res.Topics) != 2 {
		t.Fatalf("result %+v", res)
	}
	for _, tr := range res.Topics {
		if tr.SourceRecords != 200 || tr.TargetRecords != 200 || !tr.Match || tr.RemoteTopic != "us-east."+tr.Topic {
			t.Errorf("topic %+v", tr)
		}
	}
	if res.OffsetSyncs == 0 || res.Heartbeats == 0 {
		t.Errorf("offset syncs %d, heartbeats %d: want some of each", res.OffsetSyncs, res.Heartbeats)
	}
	// The config it used is kept with --dir, and it is valid.
	props, err := os.ReadFile(filepath.Join(dir, "mm2.properties"))
	if err != nil || !strings.Contains(string(props), "us-east->eu-west.enabled = true") {
		t.Fatalf("mm2.properties: %v\n%s", err, props)
	}
	ios, _, _, errOut = iostreams.Test()
	if code := cli.Run(ctx, ios, []string{"config", "validate", "-c", filepath.Join(dir, "mm2.properties")}, nil); code != 0 {
		t.Fatalf("the demo's mm2.properties does not validate: %s", errOut.String())
	}
}

func TestDemoTable(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code := cli.Run(ctx, ios, []string{"demo", "--records", "50"}, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "orders\t50\tus-east.orders\t50\tyes" || lines[1] != "payments\t50\tus-east.payments\t50\tyes" {
		t.Fatalf("output:\n%s", out.String())
	}
}

// TestReadmeShowsDemoOutput runs `mirrorctl demo` as `make demo` does, on a
// terminal, and checks that README.md's quick start shows exactly the table
// it prints, so the README cannot drift from the demo.
func TestReadmeShowsDemoOutput(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "`make demo` starts")
	if !ok {
		t.Fatal("README.md has no paragraph starting \"`make demo` starts\"")
	}
	_, block, ok := strings.Cut(after, "```\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("README.md's `make demo` paragraph is not followed by a fenced block")
	}
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(true)
	ios.SetColorDisabled(true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code := cli.Run(ctx, ios, []string{"demo"}, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	// A terminal's table pads its last column; the README's lines end at
	// their text.
	lines := strings.Split(out.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	got := strings.Join(lines, "\n")
	if !strings.HasPrefix(got, block) || !strings.Contains(block, "orders    500") {
		t.Errorf("README.md shows\n%s\nthe demo prints\n%s", block, got)
	}
}
