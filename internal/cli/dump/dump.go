// Package dump implements the three read-only commands that print MirrorMaker
// 2's internal topics:
//
//   - `mirrorctl checkpoints dump` reads <source>.checkpoints.internal on the
//     target (MM2 MirrorCheckpointTask output, read as RemoteClusterUtils
//     does);
//   - `mirrorctl offset-syncs dump` reads mm2-offset-syncs.<alias>.internal
//     where offset-syncs.topic.location puts it (KIP-716);
//   - `mirrorctl heartbeats dump` reads `heartbeats` on one cluster.
//
// Each reads partition 0 of its topic from the log start to the end offset at
// the start of the read (replicate.ReadInternalTopic), decodes every record
// with the replicate/mm2 codecs, filters, optionally keeps only the newest
// record per key (--latest: last in log order wins, as MirrorClient does),
// sorts and prints. Undecodable records (short, tombstones, unknown value
// versions) are never fatal: they are listed by record offset in the
// "skipped" array and summarised on stderr.
//
// The key types are [CheckpointsOptions], [OffsetSyncsOptions] and
// [HeartbeatsOptions]; cmdutil.ResolveFlow picks the flow from
// --source/--target or the config's one enabled flow, and [TopicNotFoundError] reports a missing
// internal topic with the other naming variant (KIP-690 / KIP-949).
//
// Decoded records are held in compact structs (strings interned to int32
// ids, times in epoch milliseconds, no *kgo.Record retained), and the
// non-TTY formats (TSV, CSV, JSON) are written row by row, so a dump of
// millions of records stays within a few tens of bytes per record.
package dump

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// Common holds the dependencies and flags every dump command shares.
type Common struct {
	IO      *iostreams.IOStreams
	Output  func() output.Format
	Config  func() (*config.Config, error)
	Clients func() (replicate.Clients, error)
	// Now is the reference for the AGE column on a TTY.
	Now func() time.Time

	// Source and Target are --source and --target: the flow whose topic is
	// read. Both empty means the config's one enabled flow.
	Source, Target string
	// Latest is --latest: keep only the last record in log order per key.
	Latest bool
}

func newCommon(f *cmdutil.Factory) Common {
	return Common{
		IO: f.IO, Output: f.Output, Config: f.Config, Now: f.Now,
		Clients: func() (replicate.Clients, error) { return f.Kafka() },
	}
}

// compileName compiles the --flag regular expression expr (Go RE2 syntax)
// anchored to match a whole name, as MM2's topic and group filters do. An
// empty expr matches everything (nil). A bad expression is a
// *cmdutil.FlagError.
func compileName(flag, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		return nil, cmdutil.FlagErrorf("--%s %q: %w", flag, expr, err)
	}
	return re, nil
}

// TopicNotFoundError reports that an MM2 internal topic does not exist on the
// cluster it was looked for on. Variant is the same topic under the other
// internal-name convention (dots before Kafka 3.1 or with
// replication.policy.internal.topic.separator.enabled=false, the separator
// otherwise; KIP-690, KIP-949), "" when the separator is "." and both
// conventions agree; VariantExists says whether that name exists there.
// Hint, when set, is a sentence on what to check.
type TopicNotFoundError struct {
	Cluster       string
	Topic         string
	Variant       string
	VariantExists bool
	Hint          string
}

func (e *TopicNotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "topic %s does not exist on cluster %s", e.Topic, e.Cluster)
	switch {
	case e.Variant != "" && e.VariantExists:
		fmt.Fprintf(&b, ", but %s (the other internal-topic naming) does: ", e.Variant)
		if isDotted(e.Variant) {
			fmt.Fprintf(&b, "MM2 before 3.1, or with %s = false, names internal topics with dots; set that key to false to read it", policy.KeyInternalSeparatorEnabled)
		} else {
			fmt.Fprintf(&b, "MM2 3.1+ names internal topics with %s; remove %s = false to read it", policy.KeySeparator, policy.KeyInternalSeparatorEnabled)
		}
	case e.Variant != "":
		fmt.Fprintf(&b, " (nor does the other naming variant %s)", e.Variant)
	}
	if e.Hint != "" && !e.VariantExists {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// isDotted reports whether an internal topic name uses the dotted convention.
func isDotted(topic string) bool { return strings.HasSuffix(topic, ".internal") }

// internalVariant returns the name topicFor gives under the other
// internal-separator convention of p's separator, or "" when the separator
// is "." (both conventions agree) or the names coincide.
func internalVariant(p policy.Policy, current string, topicFor func(policy.Policy) string) string {
	sep := p.Separator()
	if sep == "." {
		return ""
	}
	for _, internal := range []bool{true, false} {
		if v := topicFor(policy.NewDefault(sep, internal)); v != current {
			return v
		}
	}
	return ""
}

// checkTopic returns nil if topic exists on cluster alias, else a
// *TopicNotFoundError that says whether variant ("" for none) exists. Other
// metadata failures (authorization, network) are returned wrapped, naming the
// topic and cluster.
func checkTopic(ctx context.Context, clients replicate.Clients, alias, topic, variant, hint string) error {
	adm, err := clients.Admin(alias)
	if err != nil {
		return err
	}
	names := []string{topic}
	if variant != "" {
		names = append(names, variant)
	}
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("describe topic %s on cluster %s: %w", topic, alias, err)
	}
	d, ok := details[topic]
	switch {
	case ok && d.Err == nil:
		return nil
	case ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("describe topic %s on cluster %s: %w", topic, alias, d.Err)
	}
	nf := &TopicNotFoundError{Cluster: alias, Topic: topic, Variant: variant, Hint: hint}
	if v, ok := details[variant]; variant != "" && ok && v.Err == nil {
		nf.VariantExists = true
	}
	return nf
}

// Skipped is one record that could not be decoded: its offset in partition 0
// and the decoder's message (an *mm2.DecodeError's text, e.g.
// `checkpoint value: field "offset": need 8 bytes, have 3`).
type Skipped struct {
	RecordOffset int64  `json:"record_offset"`
	Error        string `json:"error"`
}

// keyDecoded reports whether err (from an mm2 decoder) left the key fully
// decoded, so the record can still be matched against the filters.
func keyDecoded(err error) bool {
	var de *mm2.DecodeError
	return errors.As(err, &de) && de.Part == "value"
}

// maxSkippedListed is how many skipped records the stderr summary lists.
const maxSkippedListed = 10

// printSkipped writes "N records skipped: offset 58: <error>; offset 61:
// <error>" to stderr, listing at most maxSkippedListed records.
func printSkipped(ios *iostreams.IOStreams, skipped []Skipped) {
	if len(skipped) == 0 {
		return
	}
	parts := make([]string, 0, min(len(skipped), maxSkippedListed)+1)
	for i, s := range skipped {
		if i == maxSkippedListed {
			parts = append(parts, fmt.Sprintf("and %d more (-o json lists them all)", len(skipped)-maxSkippedListed))
			break
		}
		parts = append(parts, fmt.Sprintf("offset %d: %s", s.RecordOffset, s.Error))
	}
	noun := "records"
	if len(skipped) == 1 {
		noun = "record"
	}
	cmdutil.Warnf(ios, "%d %s skipped: %s", len(skipped), noun, strings.Join(parts, "; "))
}

// strtab interns strings to dense int32 ids, and remembers per id whether the
// string passed a filter, so each distinct name is allocated once and
// matched once however many records carry it.
type strtab struct {
	ids   map[string]int32
	names []string
	ok    []bool
	re    *regexp.Regexp
}

func newStrtab(re *regexp.Regexp) *strtab {
	return &strtab{ids: make(map[string]int32), re: re}
}

// id returns s's id and whether s matches the table's filter.
func (t *strtab) id(s string) (int32, bool) {
	if id, ok := t.ids[s]; ok {
		return id, t.ok[id]
	}
	id := int32(len(t.names))
	t.ids[s] = id
	t.names = append(t.names, s)
	m := t.re == nil || t.re.MatchString(s)
	t.ok = append(t.ok, m)
	return id, m
}

// match reports whether s passes the filter without interning it.
func (t *strtab) match(s string) bool {
	if id, ok := t.ids[s]; ok {
		return t.ok[id]
	}
	return t.re == nil || t.re.MatchString(s)
}

// ranks returns, per id, the position of its string in sorted order, so
// rows can be sorted by comparing ints.
func (t *strtab) ranks() []int32 {
	order := make([]int32, len(t.names))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(t.names[a], t.names[b]) })
	r := make([]int32, len(order))
	for pos, id := range order {
		r[id] = int32(pos)
	}
	return r
}

// dumpGCPercent is the garbage collector target used while a dump reads and
// sorts. A dump keeps every decoded row (about 48 bytes each, plus the
// --latest index) until it is printed, while the Kafka client leaves about
// 150 bytes of garbage per record; collecting when the heap has grown by half
// rather than doubled keeps peak memory near 1.5x the rows (1M checkpoints:
// about 155 MiB peak RSS instead of 200 MiB) and costs no measurable time.
const dumpGCPercent = 50

// lowerGC sets the GC target to dumpGCPercent unless the user set GOGC, and
// returns the function that restores the previous target. mirrorctl runs one
// command per process, so the process-wide setting is the dump's alone.
func lowerGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(dumpGCPercent)
	return func() { debug.SetGCPercent(prev) }
}

// timeLayout is RFC 3339 in UTC with milliseconds, the precision of Kafka
// record timestamps, used in JSON, CSV and TSV.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// chunkRows is the number of rows per chunk of a rowStore.
const chunkRows = 1 << 14

// rowStore is an append-only list of rows kept in fixed-size chunks, so
// growing it never copies the rows or holds two copies at once (a slice
// that doubles can briefly need three times its final size), and sorting
// permutes a []int32 of row numbers instead of moving the rows.
type rowStore[T any] struct {
	chunks [][]T
	n      int
	order  []int32 // sorted row numbers, set by sortBy
}

// add appends v and returns its row number.
func (s *rowStore[T]) add(v T) int32 {
	if s.n%chunkRows == 0 {
		s.chunks = append(s.chunks, make([]T, 0, chunkRows))
	}
	last := len(s.chunks) - 1
	s.chunks[last] = append(s.chunks[last], v)
	s.n++
	return int32(s.n - 1)
}

// at returns row i (in insertion order).
func (s *rowStore[T]) at(i int32) *T { return &s.chunks[i/chunkRows][i%chunkRows] }

// sortBy orders the rows by cmp; sorted(i) then returns the i-th.
func (s *rowStore[T]) sortBy(cmp func(a, b *T) int) {
	s.order = make([]int32, s.n)
	for i := range s.order {
		s.order[i] = int32(i)
	}
	slices.SortFunc(s.order, func(a, b int32) int { return cmp(s.at(a), s.at(b)) })
}

// sorted returns the i-th row in sortBy order.
func (s *rowStore[T]) sorted(i int) *T { return s.at(s.order[i]) }
