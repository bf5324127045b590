package dump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/kafka"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// t0 is the timestamp of the first test record; testNow is pinned an hour
// and a bit later, for the TTY age column.
var (
	t0      = time.Date(2024, 5, 1, 12, 0, 0, 123e6, time.UTC)
	testNow = t0.Add(90 * time.Minute)
)

// clusterPair is two embedded kfake clusters, us-east and us-west, and an
// mm2.properties in a temp dir that points at them.
type clusterPair struct {
	addrs map[string]string
	dir   string
	path  string
}

// newClusterPair starts the clusters and writes mm2.properties with the
// clusters' bootstrap servers, "us-east->us-west.enabled = true" and the
// extra lines.
func newClusterPair(t testing.TB, extra ...string) *clusterPair {
	t.Helper()
	p := &clusterPair{addrs: map[string]string{}, dir: t.TempDir()}
	for _, alias := range []string{"us-east", "us-west"} {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		p.addrs[alias] = c.ListenAddrs()[0]
	}
	p.writeConfig(t, append([]string{"us-east->us-west.enabled = true"}, extra...)...)
	return p
}

// writeConfig (re)writes mm2.properties with the two clusters and lines.
func (p *clusterPair) writeConfig(t testing.TB, lines ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("clusters = us-east, us-west\n")
	fmt.Fprintf(&b, "us-east.bootstrap.servers = %s\n", p.addrs["us-east"])
	fmt.Fprintf(&b, "us-west.bootstrap.servers = %s\n", p.addrs["us-west"])
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	p.path = filepath.Join(p.dir, "mm2.properties")
	if err := os.WriteFile(p.path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (p *clusterPair) client(t testing.TB, alias string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addrs[alias]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a one-partition topic on alias.
func (p *clusterPair) createTopic(t testing.TB, alias, topic string) {
	t.Helper()
	adm := kadm.NewClient(p.client(t, alias))
	resp, err := adm.CreateTopics(context.Background(), 1, 1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create %s on %s: %v", topic, alias, err)
	}
}

// rec is a raw record for produce; nil Value is a tombstone.
type rec struct {
	Key, Value []byte
	At         time.Time
}

// produce creates topic on alias and writes recs to partition 0 in order.
func (p *clusterPair) produce(t testing.TB, alias, topic string, recs []rec) {
	t.Helper()
	p.createTopic(t, alias, topic)
	cl := p.client(t, alias)
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: r.At}
	}
	if err := cl.ProduceSync(context.Background(), krs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, alias, err)
	}
}

// must returns b, or panics on err (fixture encoding never fails).
func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func cpRec(t testing.TB, c mm2.Checkpoint, at time.Time) rec {
	return rec{Key: must(c.MarshalKey()), Value: must(c.MarshalValue()), At: at}
}

func osRec(t testing.TB, s mm2.OffsetSync, at time.Time) rec {
	return rec{Key: must(s.MarshalKey()), Value: must(s.MarshalValue()), At: at}
}

func hbRec(t testing.TB, h mm2.Heartbeat) rec {
	return rec{Key: must(h.MarshalKey()), Value: must(h.MarshalValue()), At: time.UnixMilli(h.Timestamp)}
}

// factory returns a Factory like internal/cli's, over p's config, with the
// test streams, testNow and the given output format.
func (p *clusterPair) factory(t testing.TB, format output.Format, tty bool) (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(tty)
	ios.SetColorDisabled(true)
	ios.SetTerminalWidth(160)
	path := p.path
	f := &cmdutil.Factory{
		IO:         ios,
		Now:        func() time.Time { return testNow },
		ConfigPath: func() string { return path },
		Output:     func() output.Format { return format },
	}
	f.Config = sync.OnceValues(func() (*config.Config, error) { return config.Load(path) })
	f.Kafka = sync.OnceValues(func() (*kafka.Factory, error) {
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		kf := kafka.NewFactory(func(alias string, role replicate.ClientRole) (map[string]string, error) {
			cl, ok := cfg.Cluster(alias)
			if !ok {
				return nil, fmt.Errorf("no cluster %q", alias)
			}
			return cl.ClientProps(role), nil
		}, nil)
		t.Cleanup(kf.Close)
		return kf, nil
	})
	return f, out, errOut
}

// run executes cmd (built from a Factory) with args and returns its error.
func run(t testing.TB, cmd *cobra.Command, args ...string) error {
	t.Helper()
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cmd.ExecuteContext(ctx)
}

// flagCase is one row of a dump command's flag-parsing table: args parse
// to options whose flags (as projected by the test) equal want's, or fail
// with wantErr, a *cmdutil.FlagError unless cobraErr (cobra's own errors,
// e.g. an unknown flag).
type flagCase[O any] struct {
	args     []string
	want     O
	wantErr  string
	cobraErr bool
}

// testFlags runs each case through newCmd (a NewCmd...Dump with a runF
// that captures the options) and compares flags(got) with flags(&want);
// flags returns a comparable value, e.g. an array of the flag fields.
func testFlags[O any](t *testing.T, tests []flagCase[O], newCmd func(*cmdutil.Factory, func(*O) error) *cobra.Command, flags func(*O) any) {
	t.Helper()
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			var got *O
			err := run(t, newCmd(&cmdutil.Factory{IO: ios}, func(o *O) error { got = o; return nil }), tt.args...)
			if tt.wantErr != "" {
				var fe *cmdutil.FlagError
				if err == nil || err.Error() != tt.wantErr || errors.As(err, &fe) == tt.cobraErr {
					t.Fatalf("error = %v (a *FlagError: %v), want %q (a *FlagError: %v)", err, errors.As(err, &fe), tt.wantErr, !tt.cobraErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if flags(got) != flags(&tt.want) {
				t.Fatalf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// goldenCase is one run of a dump command against a clusterPair: args and
// the -o format (tty: stdout is a terminal) must print testdata/golden/
// <golden> on stdout and exactly wantStderr on stderr.
type goldenCase struct {
	name       string
	args       []string
	format     output.Format
	tty        bool
	width      int      // terminal columns; 0 is 160
	ids        []string // identity values a terminal table must show whole
	golden     string
	wantStderr string
}

// widthCases are the terminal table of a dump at each of
// clitest.TableWidths, golden base-<width>.txt, with ids shown whole.
func widthCases(base, wantStderr string, ids ...string) []goldenCase {
	var out []goldenCase
	for _, w := range clitest.TableWidths {
		out = append(out, goldenCase{name: fmt.Sprintf("tty %d", w), format: output.FormatTable, tty: true, width: w, ids: ids,
			golden: fmt.Sprintf("%s-%d.txt", base, w), wantStderr: wantStderr})
	}
	return out
}

// testGolden runs each case with a fresh command from newCmd over p.
func testGolden(t *testing.T, p *clusterPair, tests []goldenCase, newCmd func(*cmdutil.Factory) *cobra.Command) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, out, errOut := p.factory(t, tt.format, tt.tty)
			if tt.width > 0 {
				f.IO.SetTerminalWidth(tt.width)
			}
			if err := run(t, newCmd(f), tt.args...); err != nil {
				t.Fatal(err)
			}
			clitest.Golden(t, tt.golden, out.String())
			clitest.IdentitiesWhole(t, out.String(), tt.ids...)
			if errOut.String() != tt.wantStderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", errOut, tt.wantStderr)
			}
		})
	}
}
