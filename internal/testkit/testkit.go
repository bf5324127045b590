// Package testkit is the shared fixture of the tests that run mirrorctl
// against in-process Kafka clusters (franz-go's kfake): a pair of one-broker
// clusters under the aliases [East] and [West], kgo and kadm clients closed
// at test cleanup, produce, commit and read-all helpers with bounded waits,
// an mm2.properties that points at the pair, and names unique to the test
// process.
//
// It is imported by tests only. It must not import replicate or failover
// (their in-package tests import it); [Clients] satisfies the
// replicate.Clients interface structurally.
package testkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/clientrole"
)

// The aliases of the two clusters of a [Pair]: the usual flow is
// East->West ("us-east->eu-west").
const (
	East = "us-east"
	West = "eu-west"
)

// Timeout bounds every wait of the kit (a [Context], a read, a produce): a
// test that would hang fails after it instead.
const Timeout = 60 * time.Second

// Context returns a context that is cancelled after [Timeout] or when t
// ends, whichever comes first.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// MetadataMinAge is how soon a kit client may refresh its metadata again:
// 100 ms, what mirrorctl's own clients get from kafka.Options when
// retry.backoff.ms is unset (Java's default). kgo's default, 5 s, held every
// first read of, or produce to, a topic created a moment before (the
// engine's internal topics, remote topics) for 5 s, which real mirrorctl
// clients never wait.
const MetadataMinAge = 100 * time.Millisecond

var uniq atomic.Int64

// Name returns prefix-N with N unique in this test process, for topics,
// groups and transactional ids that must not collide between tests sharing
// a cluster.
func Name(prefix string) string { return fmt.Sprintf("%s-%d", prefix, uniq.Add(1)) }

// WaitFor polls cond every 20 ms until it returns true, and fails t (naming
// what) if it has not after 20 s.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Clients hands out kgo and kadm clients by cluster alias; it implements
// replicate.Clients. Every client gets the seed brokers of its alias and
// [MetadataMinAge], then Opts, then Extra[alias+"/"+role] (e.g.
// "eu-west/producer"), then the caller's options. The admin client of an
// alias is created once and closed at t's cleanup; other clients are the
// caller's to close.
type Clients struct {
	// Opts are options every client gets, e.g. kgo.RetryTimeout.
	Opts []kgo.Opt
	// Extra are options per "alias/role", set by a test before it starts
	// the code under test.
	Extra map[string][]kgo.Opt

	t      testing.TB
	addrs  map[string][]string
	mu     sync.Mutex
	admins map[string]*kadm.Client
}

// NewClients returns Clients over addrs (alias -> host:port list).
func NewClients(t testing.TB, addrs map[string][]string) *Clients {
	return &Clients{t: t, addrs: addrs, Extra: make(map[string][]kgo.Opt), admins: make(map[string]*kadm.Client)}
}

// Client returns a new client for alias in role ("producer", "consumer",
// "admin", ...). An unknown alias is an error naming it.
func (c *Clients) Client(alias string, role clientrole.Role, extra ...kgo.Opt) (*kgo.Client, error) {
	addrs, ok := c.addrs[alias]
	if !ok {
		return nil, fmt.Errorf("unknown alias %q", alias)
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.MetadataMinAge(MetadataMinAge)}, c.Opts...)
	opts = append(opts, c.Extra[alias+"/"+string(role)]...)
	return kgo.NewClient(append(opts, extra...)...)
}

// Admin returns alias's shared admin client.
func (c *Clients) Admin(alias string) (*kadm.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.admins[alias]; ok {
		return a, nil
	}
	cl, err := c.Client(alias, clientrole.Admin)
	if err != nil {
		return nil, err
	}
	a := kadm.NewClient(cl)
	c.admins[alias] = a
	c.t.Cleanup(cl.Close)
	return a, nil
}

// Pair is two one-broker kfake clusters on ephemeral ports, East and West
// (aliases [East] and [West]), and Clients over them. Both are closed at the
// test's cleanup.
type Pair struct {
	East, West *kfake.Cluster
	Clients    *Clients
}

// NewPairWith starts the two clusters with opts on both (e.g.
// kfake.GroupMinSessionTimeout for tests that let a group member die).
func NewPairWith(t testing.TB, opts ...kfake.Opt) *Pair {
	t.Helper()
	return newPair(t, opts, opts)
}

// NewPair starts the two clusters; eastOpts are extra kfake options for
// the East cluster only (e.g. kfake.EnableSASL). It fails t if either does
// not start.
func NewPair(t testing.TB, eastOpts ...kfake.Opt) *Pair {
	t.Helper()
	return newPair(t, eastOpts, nil)
}

func newPair(t testing.TB, eastOpts, westOpts []kfake.Opt) *Pair {
	t.Helper()
	// Each cluster has its own cluster ID (kfake's default is "kfake" for
	// every cluster), as real clusters do: the engine refuses two aliases
	// of one cluster ID.
	start := func(alias string, opts ...kfake.Opt) *kfake.Cluster {
		c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID(Name(alias))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	east, west := start(East, eastOpts...), start(West, westOpts...)
	return &Pair{East: east, West: west,
		Clients: NewClients(t, map[string][]string{East: east.ListenAddrs(), West: west.ListenAddrs()})}
}

// Addrs returns the listen addresses of alias's cluster.
func (p *Pair) Addrs(alias string) []string { return p.Clients.addrs[alias] }

// Client returns a new client for alias with opts, closed at t's cleanup.
func (p *Pair) Client(t testing.TB, alias string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := p.Clients.Client(alias, "test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns alias's shared admin client.
func (p *Pair) Admin(t testing.TB, alias string) *kadm.Client {
	t.Helper()
	a, err := p.Clients.Admin(alias)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// CreateTopic creates topic on alias with partitions partitions,
// replication factor 1 and configs (nil for the broker defaults).
func (p *Pair) CreateTopic(t testing.TB, alias, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := p.Admin(t, alias).CreateTopic(Context(t), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s on %s: %v", topic, alias, err)
	}
}

// Produce writes recs to alias synchronously, each to its own Partition
// (manual partitioner), in order.
func (p *Pair) Produce(t testing.TB, alias string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := p.Clients.Client(alias, clientrole.Producer, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(Context(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", alias, err)
	}
}

// Commit commits offsets (topic -> partition -> next offset to read) for
// group on alias, with leader epoch -1 and metadata "meta-<group>".
func (p *Pair) Commit(t testing.TB, alias, group string, offsets map[string]map[int32]int64) {
	t.Helper()
	os := kadm.Offsets{}
	for topic, parts := range offsets {
		for part, at := range parts {
			os.Add(kadm.Offset{Topic: topic, Partition: part, At: at, LeaderEpoch: -1, Metadata: "meta-" + group})
		}
	}
	resp, err := p.Admin(t, alias).CommitOffsets(Context(t), group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s on %s: %v", group, alias, err)
	}
}

// ReadAll reads every record of topic on alias from the log start to the
// end offsets at call time, per partition (every partition has an entry,
// nil when empty), control records (transaction markers) excluded. It fails
// t on a fetch error or after [Timeout].
func (p *Pair) ReadAll(t testing.TB, alias, topic string) map[int32][]*kgo.Record {
	t.Helper()
	return p.readAll(t, alias, topic)
}

// ReadAllCommitted is ReadAll read_committed: records of aborted
// transactions are left out. It waits for transactions open at the call to
// end (it reads to the high watermark).
func (p *Pair) ReadAllCommitted(t testing.TB, alias, topic string) map[int32][]*kgo.Record {
	t.Helper()
	return p.readAll(t, alias, topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
}

func (p *Pair) readAll(t testing.TB, alias, topic string, opts ...kgo.Opt) map[int32][]*kgo.Record {
	t.Helper()
	ctx := Context(t)
	adm := p.Admin(t, alias)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int32][]*kgo.Record)
	want := make(map[int32]int64)
	assign := make(map[int32]kgo.Offset)
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		s, _ := starts.Lookup(o.Topic, o.Partition)
		out[o.Partition] = nil
		if o.Offset > s.Offset {
			want[o.Partition] = o.Offset
			assign[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return out
	}
	// Control records are fetched so that a partition ending in a marker
	// still reaches its end offset.
	cl, err := p.Clients.Client(alias, clientrole.Consumer,
		append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}), kgo.KeepControlRecords()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s on %s: timed out with partitions %v unfinished", topic, alias, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], r)
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

// WriteConfig writes an mm2.properties for the pair in a temp dir and
// returns its path: both clusters' bootstrap servers, the flow
// us-east->eu-west enabled, every replication factor 1 (one broker),
// heartbeats off, then the extra lines (newline-terminated, may be "").
func (p *Pair) WriteConfig(t testing.TB, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mm2.properties")
	props := fmt.Sprintf(`clusters = %[1]s, %[2]s
%[1]s.bootstrap.servers = %[3]s
%[2]s.bootstrap.servers = %[4]s
%[1]s->%[2]s.enabled = true
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
emit.heartbeats.enabled = false
%[5]s`, East, West, strings.Join(p.Addrs(East), ","), strings.Join(p.Addrs(West), ","), extra)
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// CheckCopy checks one partition's copy of a sequence of n source records,
// given as the source index of each record on the target, in target order.
// At-least-once copying may repeat a run of records after a restart or a
// handover, but never skips one and never reorders within a run: each index
// is the one after its predecessor, or a rewind to an index already copied.
// It returns how many records are repeats, or an error naming the first
// record that breaks the rule or the first source record never copied.
func CheckCopy(idx []int, n int) (dups int, err error) {
	next, prev := 0, -1 // next: lowest index not yet copied
	for pos, i := range idx {
		switch {
		case i > next:
			return dups, fmt.Errorf("target record %d is source record %d: records %d..%d were skipped", pos, i, next, i-1)
		case i != prev+1 && i >= next:
			return dups, fmt.Errorf("target record %d is source record %d after %d: out of order", pos, i, prev)
		case i < next:
			dups++
		default:
			next++
		}
		prev = i
	}
	if next < n {
		return dups, fmt.Errorf("source records %d..%d never reached the target", next, n-1)
	}
	return dups, nil
}
