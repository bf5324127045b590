package dump

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// TestStreamMatchesOutputPackage checks that the row-by-row JSON and CSV
// writers produce exactly what internal/output produces for the whole
// result, including empty arrays, HTML characters, quotes, commas, leading
// spaces and line breaks.
func TestStreamMatchesOutputPackage(t *testing.T) {
	cps := []mm2.Checkpoint{
		{Group: "g<1>&", Topic: "us-east.orders", Partition: 3, UpstreamOffset: 1234, DownstreamOffset: 1200},
		{Group: "a,b", Topic: " lead", Partition: 0, UpstreamOffset: 1, DownstreamOffset: 1, Metadata: "x\"y\nz"},
		{Group: `\.`, Topic: "t", Partition: 1, UpstreamOffset: -1, DownstreamOffset: 0, Metadata: "é\r"},
	}
	tests := []struct {
		name    string
		records int
		bad     bool
	}{
		{name: "empty", records: 0},
		{name: "rows", records: len(cps)},
		{name: "rows and skipped", records: len(cps), bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col, err := newCPCollector("", "", false)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(12)
			it := replicate.InternalTopic{Kind: "checkpoints", Cluster: "eu-west", Topic: "us-east_checkpoints_internal", Other: "us-east.checkpoints.internal", OtherRecords: &n}
			want := CheckpointsResult{Envelope: output.NewEnvelope(), InternalTopic: it, Checkpoints: []CheckpointRow{}, Skipped: []Skipped{}}
			tbl := output.NewTable("group", "topic", "partition", "upstream_offset", "downstream_offset", "metadata", "timestamp", "record_offset")
			ts := t0.UnixMilli()
			for i, c := range cps[:tt.records] {
				col.add(must(c.MarshalKey()), must(c.MarshalValue()), ts, int64(i))
			}
			if tt.bad {
				col.add([]byte{1}, nil, ts, 9)
				want.Skipped = append(want.Skipped, Skipped{RecordOffset: 9, Error: `checkpoint key: field "group": need 2 bytes, have 1`})
			}
			col.sort()
			for i := range col.rows.n {
				r := col.rows.sorted(i)
				c := cps[r.offset]
				want.Checkpoints = append(want.Checkpoints, CheckpointRow{Group: c.Group, Topic: c.Topic, Partition: c.Partition,
					UpstreamOffset: c.UpstreamOffset, DownstreamOffset: c.DownstreamOffset, Metadata: c.Metadata,
					Timestamp: "2024-05-01T12:00:00.123Z", RecordOffset: r.offset})
				tbl.AddRow(c.Group, c.Topic, itoa(int64(c.Partition)), itoa(c.UpstreamOffset), itoa(c.DownstreamOffset), c.Metadata,
					"2024-05-01T12:00:00.123Z", itoa(r.offset))
			}
			for _, format := range []output.Format{output.FormatJSON, output.FormatCSV, output.FormatTable} {
				ios, _, got, _ := iostreams.Test()
				c := &Common{IO: ios, Output: func() output.Format { return format }, Now: func() time.Time { return testNow }}
				sh := col.sheet()
				sh.internal = &it
				if err := render(c, sh); err != nil {
					t.Fatal(err)
				}
				wantIO, _, wantOut, _ := iostreams.Test()
				if format == output.FormatJSON {
					if err := output.WriteJSON(wantOut, want); err != nil {
						t.Fatal(err)
					}
				} else if err := tbl.Render(wantIO, format); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), wantOut.Bytes()) {
					t.Errorf("%s differs from internal/output:\n--- got ---\n%s\n--- want ---\n%s", format, got, wantOut)
				}
			}
		})
	}
}

func TestStrtab(t *testing.T) {
	re, err := compileName("group", "b.*|a")
	if err != nil {
		t.Fatal(err)
	}
	tab := newStrtab(re)
	tests := []struct {
		s      string
		wantID int32
		wantOK bool
	}{
		{"bravo", 0, true},
		{"alpha", 1, false}, // anchored: "a" must match the whole name
		{"a", 2, true},
		{"bravo", 0, true},
		{"xb", 3, false},
	}
	for _, tt := range tests {
		id, ok := tab.id(tt.s)
		if id != tt.wantID || ok != tt.wantOK {
			t.Errorf("id(%q) = %d, %v; want %d, %v", tt.s, id, ok, tt.wantID, tt.wantOK)
		}
	}
	if got, want := tab.ranks(), []int32{2, 1, 0, 3}; !slices.Equal(got, want) {
		t.Errorf("ranks = %v, want %v (a < alpha < bravo < xb)", got, want)
	}
	if tab.match("zzz") || !tab.match("bzz") {
		t.Error("match: want zzz rejected and bzz accepted")
	}
	if len(tab.names) != 4 {
		t.Errorf("match interned a string: %d names", len(tab.names))
	}
}

func TestPrintSkippedLimit(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	var s []Skipped
	for i := range 12 {
		s = append(s, Skipped{RecordOffset: int64(i), Error: "e"})
	}
	printSkipped(ios, s)
	want := "warning: 12 records skipped: offset 0: e; offset 1: e; offset 2: e; offset 3: e; offset 4: e; offset 5: e; " +
		"offset 6: e; offset 7: e; offset 8: e; offset 9: e; and 2 more (-o json lists them all)\n"
	if errOut.String() != want {
		t.Fatalf("stderr = %q\nwant %q", errOut, want)
	}
}

// TestColumnsMatchRowTypes keeps each dump's column declaration and its
// exported JSON row type (the documented -o json shape) in step: the same
// names in the same order.
func TestColumnsMatchRowTypes(t *testing.T) {
	cp, _ := newCPCollector("", "", false)
	os, _ := newOSCollector("", false)
	hb, _ := newHBCollector("", "", false)
	for _, tt := range []struct {
		sheet *sheet
		row   any
	}{
		{cp.sheet(), CheckpointRow{}},
		{os.sheet(), OffsetSyncRow{}},
		{hb.sheet(), HeartbeatRow{}},
	} {
		rt := reflect.TypeOf(tt.row)
		var tags []string
		for i := range rt.NumField() {
			tags = append(tags, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		if got := tt.sheet.names(); !slices.Equal(got, tags) {
			t.Errorf("%s: columns %v, json tags of %s %v", tt.sheet.jsonKey, got, rt.Name(), tags)
		}
	}
}
