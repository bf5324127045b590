//go:build kafka

package itest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// tp is a topic-partition key.
type tp struct {
	Topic     string
	Partition int32
}

// translated is one line of the TranslateOffsets helper's JSON output.
type translated struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
}

// TestRealMM2WritesMirrorctlReads runs a real MirrorMaker 2 (us-east ->
// eu-west) and checks that mirrorctl's codecs decode every record MM2 wrote
// to its offset-syncs, checkpoints and heartbeats topics, that the
// checkpoints carry the group's committed offsets, and that Kafka's own
// RemoteClusterUtils.translateOffsets agrees with the checkpoints as decoded
// by Go.
func TestRealMM2WritesMirrorctlReads(t *testing.T) {
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()

	u := uniq(t)
	topic := "orders-" + u
	group := "itest-orders-" + u
	remoteTopic := usEast + "." + topic
	const (
		partitions   = 3
		perPartition = 100
	)
	// Committed offsets per partition: the end (all consumed), the last
	// record (always synced, at once or at the next offset flush,
	// KAFKA-15906), and mid-log. MM2 sends at most 10 offset syncs at a time
	// and keeps only the newest pending one per partition, so a burst can
	// leave a partition with no sync below a mid-log offset (seen here: a
	// partition whose only sync was 99). The records are therefore produced
	// in two halves, the second once the first half's last offset is synced.
	const half = perPartition / 2
	committed := map[int32]int64{0: perPartition, 1: perPartition - 1, 2: 60}

	srcCl := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	src := kadm.NewClient(srcCl)
	if _, err := src.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create %s on us-east: %v", topic, err)
	}
	produce := func(from, to int) { // offsets [from, to) of every partition
		t.Helper()
		var recs []*kgo.Record
		for o := from; o < to; o++ {
			for p := int32(0); p < partitions; p++ {
				recs = append(recs, &kgo.Record{
					Topic:     topic,
					Partition: p,
					Key:       []byte(fmt.Sprintf("order-%d-%d", p, o)),
					Value:     []byte(fmt.Sprintf(`{"partition":%d,"n":%d}`, p, o)),
				})
			}
		}
		if err := srcCl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %d records to %s: %v", len(recs), topic, err)
		}
	}

	props := writeMM2Props(t, topic, group, east, west)
	startMM2(ctx, t, props)

	produce(0, half)
	pollUntil(ctx, t, 2*time.Minute, fmt.Sprintf("offset syncs for offset %d", half-1), func(ctx context.Context) (bool, string) {
		syncs, err := readOffsetSyncs(ctx, east, topic)
		if err != nil {
			return false, err.Error()
		}
		for p := int32(0); p < partitions; p++ {
			if ss := syncs[p]; len(ss) == 0 || ss[len(ss)-1].UpstreamOffset != half-1 {
				return false, fmt.Sprintf("%s-%d syncs: %v", topic, p, ss)
			}
		}
		return true, ""
	})
	produce(half, perPartition)
	offs := kadm.Offsets{}
	for p, o := range committed {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1, Metadata: fmt.Sprintf("md-p%d", p)})
	}
	resp, err := src.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit offsets for group %s on us-east: %v", group, err)
	}

	// Wait until every record is replicated and the newest checkpoint of
	// every partition carries the committed offset and a translation the
	// decoded offset syncs call for: exactly the newest sync's for the two
	// partitions committed at or past the last sync, which MM2's sync store
	// always keeps; for the mid-log one, some sync at or below the committed
	// offset, since the store thins out older syncs (OffsetSyncStore).
	dst := kadm.NewClient(newClient(t, west))
	var (
		syncs  map[int32][]mm2.OffsetSync
		latest map[tp]mm2.Checkpoint
	)
	pollUntil(ctx, t, 3*time.Minute, "MM2 checkpoints for "+group, func(ctx context.Context) (bool, string) {
		ends, err := dst.ListEndOffsets(ctx, remoteTopic)
		if err != nil || ends.Error() != nil {
			return false, fmt.Sprintf("%s on eu-west: %v %v", remoteTopic, err, ends.Error())
		}
		for p := int32(0); p < partitions; p++ {
			if o, ok := ends.Lookup(remoteTopic, p); !ok || o.Offset < perPartition {
				return false, fmt.Sprintf("%s-%d on eu-west has %d of %d records", remoteTopic, p, o.Offset, perPartition)
			}
		}
		syncs, err = readOffsetSyncs(ctx, east, topic)
		if err != nil {
			return false, err.Error()
		}
		latest, err = readCheckpoints(ctx, west, group)
		if err != nil {
			return false, err.Error()
		}
		for p := int32(0); p < partitions; p++ {
			g := committed[p]
			c, ok := latest[tp{remoteTopic, p}]
			if !ok {
				return false, fmt.Sprintf("no checkpoint yet for %s-%d", remoteTopic, p)
			}
			want, ok := translate(syncs[p], g)
			if !ok {
				return false, fmt.Sprintf("no offset sync at or below %d for %s-%d yet", g, topic, p)
			}
			if c.UpstreamOffset != g {
				return false, fmt.Sprintf("latest checkpoint %v, want upstream %d", c, g)
			}
			if g >= perPartition-1 && c.DownstreamOffset != want {
				return false, fmt.Sprintf("latest checkpoint %v, want downstream %d", c, want)
			}
			if !fromSomeSync(syncs[p], g, c.DownstreamOffset) || c.DownstreamOffset > want {
				return false, fmt.Sprintf("latest checkpoint %v: downstream follows from no sync at or below %d in %v", c, g, syncs[p])
			}
		}
		return true, ""
	})

	// Offset syncs: the last record of each partition (offset 99) is synced,
	// either at once or at the next offset flush (KAFKA-15906).
	for p := int32(0); p < partitions; p++ {
		ss := syncs[p]
		if len(ss) == 0 {
			t.Fatalf("no offset syncs for %s-%d", topic, p)
		}
		if got := ss[len(ss)-1].UpstreamOffset; got != perPartition-1 {
			t.Errorf("%s-%d: newest offset sync has upstream %d, want %d", topic, p, got, perPartition-1)
		}
	}

	// Checkpoints: names, offsets and metadata.
	if len(latest) != len(committed) {
		t.Errorf("group %s has checkpoints for %d partitions, want %d: %v", group, len(latest), len(committed), latest)
	}
	for k, c := range latest {
		if c.Topic != remoteTopic {
			t.Errorf("checkpoint topic %q, want %q", c.Topic, remoteTopic)
		}
		if g := committed[k.Partition]; c.UpstreamOffset != g {
			t.Errorf("%s-%d: checkpoint upstream %d, want committed %d", c.Topic, c.Partition, c.UpstreamOffset, g)
		}
		if want := fmt.Sprintf("md-p%d", k.Partition); c.Metadata != want {
			t.Errorf("%s-%d: checkpoint metadata %q, want %q", c.Topic, c.Partition, c.Metadata, want)
		}
	}

	// Heartbeats on both clusters: the flow's herder writes (us-east,
	// eu-west) on eu-west, the reverse herder (eu-west, us-east) on us-east.
	checkHeartbeats(ctx, t, west, usEast, euWest, start)
	checkHeartbeats(ctx, t, east, euWest, usEast, start)

	// Kafka's RemoteClusterUtils.translateOffsets must return the newest
	// checkpoint per partition, as decoded by Go. A checkpoint may land
	// between the two reads, so compare again until they agree.
	pollUntil(ctx, t, time.Minute, "translateOffsets agrees with decoded checkpoints", func(ctx context.Context) (bool, string) {
		out, err := tryScript(ctx, "translate-offsets", "--bootstrap", west, "--source-alias", usEast,
			"--group", group, "--timeout-ms", "20000")
		if err != nil {
			return false, err.Error()
		}
		javaRes, err := parseTranslated(out)
		if err != nil {
			return false, err.Error()
		}
		if latest, err = readCheckpoints(ctx, west, group); err != nil {
			return false, err.Error()
		}
		var goRes []translated
		for _, c := range latest {
			goRes = append(goRes, translated{c.Topic, c.Partition, c.DownstreamOffset, c.Metadata})
		}
		sortTranslated(goRes)
		if fmt.Sprint(javaRes) != fmt.Sprint(goRes) {
			return false, fmt.Sprintf("Java translateOffsets %v, Go checkpoints %v", javaRes, goRes)
		}
		if len(javaRes) != partitions {
			return false, fmt.Sprintf("translateOffsets returned %d partitions, want %d", len(javaRes), partitions)
		}
		// `mirrorctl checkpoints dump --latest` over MM2's topic must say
		// the same as RemoteClusterUtils.
		dump, err := dumpLatest(t, props, group)
		if err != nil {
			return false, err.Error()
		}
		if fmt.Sprint(dump) != fmt.Sprint(javaRes) {
			return false, fmt.Sprintf("mirrorctl checkpoints dump %v, Java translateOffsets %v", dump, javaRes)
		}
		return true, ""
	})
}

// dumpLatest runs `mirrorctl checkpoints dump --latest -o json` for group
// with the mm2.properties at props, as translated rows sorted like
// translateOffsets' output.
func dumpLatest(t *testing.T, props, group string) ([]translated, error) {
	t.Helper()
	code, stdout, stderr := mirrorctl(t, "checkpoints", "dump", "--latest", "--group", regexp.QuoteMeta(group), "-o", "json", "-c", props)
	if code != 0 {
		return nil, fmt.Errorf("checkpoints dump: exit %d: %s", code, stderr)
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Checkpoints   []struct {
			Group      string `json:"group"`
			Topic      string `json:"topic"`
			Partition  int32  `json:"partition"`
			Downstream int64  `json:"downstream_offset"`
			Metadata   string `json:"metadata"`
		} `json:"checkpoints"`
		Skipped []json.RawMessage `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		return nil, fmt.Errorf("checkpoints dump output: %w: %s", err, stdout)
	}
	if doc.SchemaVersion != 1 || len(doc.Skipped) != 0 {
		return nil, fmt.Errorf("checkpoints dump: schema %d, %d skipped records", doc.SchemaVersion, len(doc.Skipped))
	}
	var out []translated
	for _, c := range doc.Checkpoints {
		out = append(out, translated{c.Topic, c.Partition, c.Downstream, c.Metadata})
	}
	sortTranslated(out)
	return out, nil
}

// translate applies MM2's rule to the newest sync at or below the committed
// offset g: the sync's downstream offset when g equals its upstream offset,
// else one past it. ok is false when no sync is at or below g.
func translate(syncs []mm2.OffsetSync, g int64) (int64, bool) {
	var best *mm2.OffsetSync
	for i := range syncs {
		if s := &syncs[i]; s.UpstreamOffset <= g && (best == nil || s.UpstreamOffset >= best.UpstreamOffset) {
			best = s
		}
	}
	switch {
	case best == nil:
		return 0, false
	case best.UpstreamOffset == g:
		return best.DownstreamOffset, true
	default:
		return best.DownstreamOffset + 1, true
	}
}

// fromSomeSync reports whether d is what MM2's rule gives for committed
// offset g from some sync at or below g (not necessarily the newest).
func fromSomeSync(syncs []mm2.OffsetSync, g, d int64) bool {
	for _, s := range syncs {
		if s.UpstreamOffset == g && d == s.DownstreamOffset || s.UpstreamOffset < g && d == s.DownstreamOffset+1 {
			return true
		}
	}
	return false
}

// readOffsetSyncs decodes every record of us-east's offset-syncs topic
// (mm2-offset-syncs.eu-west.internal); any decode error fails the read. It
// returns the syncs for topic by partition, in log order.
func readOffsetSyncs(ctx context.Context, bootstrap, topic string) (map[int32][]mm2.OffsetSync, error) {
	const name = "mm2-offset-syncs." + euWest + ".internal"
	recs, err := readAll(ctx, bootstrap, name)
	if err != nil {
		return nil, err
	}
	out := map[int32][]mm2.OffsetSync{}
	for _, r := range recs {
		s, err := mm2.DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			return nil, fmt.Errorf("%s-%d@%d: %w", name, r.Partition, r.Offset, err)
		}
		if r.Partition != 0 {
			return nil, fmt.Errorf("%s-%d@%d: offset sync %v outside partition 0", name, r.Partition, r.Offset, s)
		}
		if s.Topic == topic {
			out[s.Partition] = append(out[s.Partition], s)
		}
	}
	return out, nil
}

// readCheckpoints decodes every record of eu-west's us-east.checkpoints.internal;
// any decode error fails the read. It returns group's newest checkpoint per
// target topic-partition (the last in log order, as MirrorClient keeps).
func readCheckpoints(ctx context.Context, bootstrap, group string) (map[tp]mm2.Checkpoint, error) {
	const name = usEast + ".checkpoints.internal"
	recs, err := readAll(ctx, bootstrap, name)
	if err != nil {
		return nil, err
	}
	out := map[tp]mm2.Checkpoint{}
	for _, r := range recs {
		c, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			return nil, fmt.Errorf("%s-%d@%d: %w", name, r.Partition, r.Offset, err)
		}
		if c.Group == group {
			out[tp{c.Topic, c.Partition}] = c
		}
	}
	return out, nil
}

// checkHeartbeats decodes every record of the heartbeats topic on bootstrap
// and requires at least one from source to target emitted at or after since.
func checkHeartbeats(ctx context.Context, t *testing.T, bootstrap, source, target string, since time.Time) {
	t.Helper()
	pollUntil(ctx, t, time.Minute, fmt.Sprintf("heartbeat %s->%s on %s", source, target, bootstrap), func(ctx context.Context) (bool, string) {
		recs, err := readAll(ctx, bootstrap, "heartbeats")
		if err != nil {
			return false, err.Error()
		}
		fresh := 0
		for _, r := range recs {
			h, err := mm2.DecodeHeartbeat(r.Key, r.Value)
			if err != nil {
				t.Fatalf("heartbeats-%d@%d on %s: %v", r.Partition, r.Offset, bootstrap, err)
			}
			// Other tests name these brokers with aliases of their own (the
			// acl-plan proof does); judge only heartbeats that use the
			// harness's names.
			harness := func(a string) bool { return a == usEast || a == euWest }
			if (harness(h.SourceAlias) || harness(h.TargetAlias)) && (h.SourceAlias == target || h.TargetAlias != target) {
				t.Fatalf("heartbeats on %s (%s): record %v has the wrong aliases", bootstrap, target, h)
			}
			if h.Timestamp != r.Timestamp.UnixMilli() {
				t.Fatalf("heartbeats-%d@%d: value timestamp %d, record timestamp %d", r.Partition, r.Offset, h.Timestamp, r.Timestamp.UnixMilli())
			}
			if h.SourceAlias == source && h.Timestamp >= since.Add(-time.Second).UnixMilli() {
				fresh++
			}
		}
		return fresh > 0, fmt.Sprintf("%d heartbeats, none %s->%s since %s", len(recs), source, target, since.Format(time.RFC3339))
	})
}

func parseTranslated(out string) ([]translated, error) {
	var res []translated
	sc := bufio.NewScanner(strings.NewReader(out))
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r translated
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("translateOffsets output line %d %q: %w", line, sc.Text(), err)
		}
		res = append(res, r)
	}
	sortTranslated(res)
	return res, sc.Err()
}

func sortTranslated(rs []translated) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Topic != rs[j].Topic {
			return rs[i].Topic < rs[j].Topic
		}
		return rs[i].Partition < rs[j].Partition
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// writeMM2Props writes the mm2.properties the real-MirrorMaker-2 tests run
// with (us-east -> eu-west for topic and group only, one broker per cluster,
// checkpoints, heartbeats and refreshes every 1-2 s) in a temp dir and
// returns its path. east and west are the bootstrap servers.
func writeMM2Props(t *testing.T, topic, group, east, west string) string {
	t.Helper()
	props := filepath.Join(t.TempDir(), "mm2.properties")
	writeFile(t, props, fmt.Sprintf(`# us-east -> eu-west for %[1]s only, tuned to checkpoint within seconds.
clusters = us-east, eu-west
us-east.bootstrap.servers = %[3]s
eu-west.bootstrap.servers = %[4]s
us-east->eu-west.enabled = true
us-east->eu-west.topics = %[1]s
us-east->eu-west.groups = %[2]s
eu-west->us-east.enabled = false
tasks.max = 1
emit.checkpoints.interval.seconds = 1
emit.heartbeats.interval.seconds = 1
sync.group.offsets.enabled = false
sync.topic.acls.enabled = false
refresh.topics.interval.seconds = 2
refresh.groups.interval.seconds = 2
offset.lag.max = 10
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
config.storage.replication.factor = 1
status.storage.replication.factor = 1
us-east.offset.flush.interval.ms = 1000
eu-west.offset.flush.interval.ms = 1000
`, topic, group, east, west))
	return props
}

// startMM2 starts MirrorMaker 2 on props (scripts/kafka.sh mm2-start) and
// returns the function that stops it, also run at t's cleanup; it stops
// only once, and prints MM2's log tail first if t has failed.
func startMM2(ctx context.Context, t *testing.T, props string) (stop func()) {
	t.Helper()
	runScript(ctx, t, "mm2-start", props)
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		stopCtx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if t.Failed() {
			if out, err := tryScript(stopCtx, "logs", "mm2"); err == nil {
				t.Logf("MirrorMaker 2 log tail:\n%s", out)
			}
		}
		if _, err := tryScript(stopCtx, "mm2-stop"); err != nil {
			t.Errorf("stop MirrorMaker 2: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}
