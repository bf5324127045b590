package policy

import (
	"strings"
	"testing"
)

// none marks a Java null result.
const none = "<null>"

type row struct {
	topic     string
	source    string // none = null
	upstream  string // none = null
	original  string
	heartbeat bool
	internal  bool
	checkpts  bool
}

func opt(s string, ok bool) string {
	if !ok {
		return none
	}
	return s
}

func checkRows(t *testing.T, p Policy, rows []row) {
	t.Helper()
	for _, r := range rows {
		t.Run(p.Separator()+"/"+r.topic, func(t *testing.T) {
			if got := opt(p.TopicSource(r.topic)); got != r.source {
				t.Errorf("TopicSource(%q) = %q, want %q", r.topic, got, r.source)
			}
			if got := opt(p.UpstreamTopic(r.topic)); got != r.upstream {
				t.Errorf("UpstreamTopic(%q) = %q, want %q", r.topic, got, r.upstream)
			}
			if got := p.OriginalTopic(r.topic); got != r.original {
				t.Errorf("OriginalTopic(%q) = %q, want %q", r.topic, got, r.original)
			}
			if got := p.IsHeartbeatsTopic(r.topic); got != r.heartbeat {
				t.Errorf("IsHeartbeatsTopic(%q) = %v, want %v", r.topic, got, r.heartbeat)
			}
			if got := p.IsInternalTopic(r.topic); got != r.internal {
				t.Errorf("IsInternalTopic(%q) = %v, want %v", r.topic, got, r.internal)
			}
			if got := p.IsCheckpointsTopic(r.topic); got != r.checkpts {
				t.Errorf("IsCheckpointsTopic(%q) = %v, want %v", r.topic, got, r.checkpts)
			}
		})
	}
}

// Outputs of Kafka's DefaultReplicationPolicy and ReplicationPolicy defaults
// (separator "."); see docs/mm2-formats.md §3.
func TestDefaultDotTable(t *testing.T) {
	checkRows(t, NewDefault("", true), []row{
		{"orders", none, none, "orders", false, false, false},
		{"us-east.orders", "us-east", "orders", "orders", false, false, false},
		{"us-west.us-east.orders", "us-west", "us-east.orders", "orders", false, false, false},
		{"heartbeats", none, none, "heartbeats", true, false, false},
		{"us-east.heartbeats", "us-east", "heartbeats", "heartbeats", true, false, false},
		{"us-west.us-east.heartbeats", "us-west", "us-east.heartbeats", "heartbeats", true, false, false},
		{"myheartbeats", none, none, "myheartbeats", false, false, false},
		{"source1-heartbeats", none, none, "source1-heartbeats", false, false, false},
		{"a..b", "a", ".b", "b", false, false, false},
		{".foo", "", "foo", "foo", false, true, false},
		{"us-east.", none, none, "us-east.", false, false, false},
		{"a.", none, none, "a.", false, false, false},
		{".", none, none, ".", false, true, false},
		{"", none, none, "", false, false, false},
		{"x.y.", "x", "y.", "y.", false, false, false},
		{"us-east.checkpoints.internal", "us-east", "checkpoints.internal", "internal", false, true, true},
		{"mm2-offset-syncs.us-west.internal", "mm2-offset-syncs", "us-west.internal", "internal", false, true, false},
		{"__consumer_offsets", none, none, "__consumer_offsets", false, true, false},
		// KAFKA-17200: user topics ending in "-internal" or ".internal" are
		// mirrored; only the mirror's own and Kafka's are internal.
		{"connect-offsets-internal", none, none, "connect-offsets-internal", false, false, false},
		{"orders.internal", "orders", "internal", "internal", false, false, false},
		{"mirrorctl-progress.us-east.internal", "mirrorctl-progress", "us-east.internal", "internal", false, true, false},
	})
}

// The same names under separator "_" (KIP-690 internal names on), including
// the spec's "__consumer_offsets" row.
func TestDefaultUnderscoreTable(t *testing.T) {
	checkRows(t, NewDefault("_", true), []row{
		{"orders", none, none, "orders", false, false, false},
		{"us-east_orders", "us-east", "orders", "orders", false, false, false},
		{"us-west_us-east_orders", "us-west", "us-east_orders", "orders", false, false, false},
		{"heartbeats", none, none, "heartbeats", true, false, false},
		{"us-east_heartbeats", "us-east", "heartbeats", "heartbeats", true, false, false},
		{"us-west_us-east_heartbeats", "us-west", "us-east_heartbeats", "heartbeats", true, false, false},
		{"myheartbeats", none, none, "myheartbeats", false, false, false},
		{"source1-heartbeats", none, none, "source1-heartbeats", false, false, false},
		{"a__b", "a", "_b", "b", false, false, false},
		{"_foo", "", "foo", "foo", false, false, false},
		{"us-east_", none, none, "us-east_", false, false, false},
		{"a_", none, none, "a_", false, false, false},
		{"_", none, none, "_", false, false, false},
		{"", none, none, "", false, false, false},
		{"x_y_", "x", "y_", "y_", false, false, false},
		{"us-east_checkpoints_internal", "us-east", "checkpoints_internal", "internal", false, true, true},
		{"mm2-offset-syncs_us-west_internal", "mm2-offset-syncs", "us-west_internal", "internal", false, true, false},
		{"__consumer_offsets", "", "_consumer_offsets", "offsets", false, true, false},
		// dotted names are not remote under "_", and with the "_internal"
		// suffix a ".internal" name is a user topic
		{"us-east.orders", none, none, "us-east.orders", false, false, false},
		{"us-east.checkpoints.internal", none, none, "us-east.checkpoints.internal", false, false, false},
	})
}

// Section 2: internal names and suffixes, both separators, KIP-949 flag on/off.
func TestInternalNames(t *testing.T) {
	tests := []struct {
		sep, flag                string
		p                        Policy
		checkpoints, offsetSyncs string
		suffix                   string
		mm2Internal, notInternal string
		remoteHeartbeats         string
	}{
		{sep: ".", flag: "on", p: NewDefault(".", true),
			checkpoints: "us-east.checkpoints.internal", offsetSyncs: "mm2-offset-syncs.us-west.internal",
			suffix: ".internal", mm2Internal: "mm2-configs.us-east.internal", notInternal: "orders_internal",
			remoteHeartbeats: "us-east.heartbeats"},
		{sep: ".", flag: "off", p: NewDefault(".", false),
			checkpoints: "us-east.checkpoints.internal", offsetSyncs: "mm2-offset-syncs.us-west.internal",
			suffix: ".internal", mm2Internal: "mm2-configs.us-east.internal", notInternal: "orders_internal",
			remoteHeartbeats: "us-east.heartbeats"},
		{sep: "_", flag: "on", p: NewDefault("_", true),
			checkpoints: "us-east_checkpoints_internal", offsetSyncs: "mm2-offset-syncs_us-west_internal",
			suffix: "_internal", mm2Internal: "mm2-configs_us-east_internal", notInternal: "x_internal",
			remoteHeartbeats: "us-east_heartbeats"},
		{sep: "_", flag: "off", p: NewDefault("_", false),
			checkpoints: "us-east.checkpoints.internal", offsetSyncs: "mm2-offset-syncs.us-west.internal",
			suffix: ".internal", mm2Internal: "mm2-configs.us-east.internal", notInternal: "x.internal",
			remoteHeartbeats: "us-east_heartbeats"},
		{sep: "_", flag: "on (identity)", p: NewIdentity("_", true, "us-east"),
			checkpoints: "us-east_checkpoints_internal", offsetSyncs: "mm2-offset-syncs_us-west_internal",
			suffix: "_internal", mm2Internal: "mirrorctl-progress_us-east_internal", notInternal: "orders_internal",
			remoteHeartbeats: "us-east_heartbeats"},
	}
	for _, tt := range tests {
		t.Run(tt.sep+" "+tt.flag, func(t *testing.T) {
			p := tt.p
			if got := p.HeartbeatsTopic(); got != "heartbeats" {
				t.Errorf("HeartbeatsTopic = %q", got)
			}
			if got := p.CheckpointsTopic("us-east"); got != tt.checkpoints {
				t.Errorf("CheckpointsTopic = %q, want %q", got, tt.checkpoints)
			}
			if got := p.OffsetSyncsTopic("us-west"); got != tt.offsetSyncs {
				t.Errorf("OffsetSyncsTopic = %q, want %q", got, tt.offsetSyncs)
			}
			if got := p.InternalSuffix(); got != tt.suffix {
				t.Errorf("InternalSuffix = %q, want %q", got, tt.suffix)
			}
			if got := p.FormatRemoteTopic("us-east", "heartbeats"); got != tt.remoteHeartbeats {
				t.Errorf("FormatRemoteTopic(heartbeats) = %q, want %q", got, tt.remoteHeartbeats)
			}
			if !p.IsCheckpointsTopic(tt.checkpoints) || !p.IsMM2InternalTopic(tt.checkpoints) || !p.IsInternalTopic(tt.checkpoints) {
				t.Errorf("%q not recognised as checkpoints/MM2-internal/internal", tt.checkpoints)
			}
			if p.IsCheckpointsTopic(tt.offsetSyncs) || !p.IsMM2InternalTopic(tt.offsetSyncs) || !p.IsInternalTopic(tt.offsetSyncs) {
				t.Errorf("%q: want MM2-internal, not checkpoints", tt.offsetSyncs)
			}
			if !p.IsMM2InternalTopic(tt.mm2Internal) || !p.IsInternalTopic(tt.mm2Internal) {
				t.Errorf("%q: want MM2-internal", tt.mm2Internal)
			}
			if p.IsMM2InternalTopic(tt.notInternal) || p.IsInternalTopic(tt.notInternal) {
				t.Errorf("%q: want not internal", tt.notInternal)
			}
			if !p.IsHeartbeatsTopic(tt.remoteHeartbeats) {
				t.Errorf("%q: want heartbeats topic", tt.remoteHeartbeats)
			}
		})
	}
}

func TestFormatRemoteTopic(t *testing.T) {
	tests := []struct {
		p          Policy
		src, topic string
		want       string
	}{
		{NewDefault("", true), "us-east", "orders", "us-east.orders"},
		{NewDefault(".", true), "us-west", "us-east.orders", "us-west.us-east.orders"},
		{NewDefault("_", true), "us-east", "orders", "us-east_orders"},
		{NewDefault("--", false), "a", "b", "a--b"},
		{NewIdentity("", true, "us-east"), "us-east", "orders", "orders"},
		{NewIdentity("", true, ""), "us-east", "us-west.orders", "us-west.orders"},
		{NewIdentity("", true, ""), "us-east", "heartbeats", "us-east.heartbeats"},
		{NewIdentity("", true, ""), "us-east", "myheartbeats", "us-east.myheartbeats"},
		{NewIdentity("_", true, ""), "us-west", "us-east_heartbeats", "us-west_us-east_heartbeats"},
	}
	for _, tt := range tests {
		if got := tt.p.FormatRemoteTopic(tt.src, tt.topic); got != tt.want {
			t.Errorf("%T(%q).FormatRemoteTopic(%q, %q) = %q, want %q", tt.p, tt.p.Separator(), tt.src, tt.topic, got, tt.want)
		}
	}
}

// Identity: non-heartbeat topics keep their name and their source is the
// configured alias (or null); heartbeat-suffixed topics behave like Default.
func TestIdentityTable(t *testing.T) {
	withAlias := []row{
		{"orders", "us-east", "orders", "orders", false, false, false},
		{"us-west.orders", "us-east", "us-west.orders", "us-west.orders", false, false, false},
		{"heartbeats", none, none, "heartbeats", true, false, false},
		{"us-east.heartbeats", "us-east", "heartbeats", "heartbeats", true, false, false},
		{"us-west.us-east.heartbeats", "us-west", "us-east.heartbeats", "heartbeats", true, false, false},
		{"myheartbeats", none, none, "myheartbeats", false, false, false},
		{"src.myheartbeats", "src", "myheartbeats", "myheartbeats", false, false, false},
		{"__consumer_offsets", "us-east", "__consumer_offsets", "__consumer_offsets", false, true, false},
		{"us-east.checkpoints.internal", "us-east", "us-east.checkpoints.internal", "us-east.checkpoints.internal", false, true, true},
	}
	checkRows(t, NewIdentity("", true, "us-east"), withAlias)

	var noAlias []row
	for _, r := range withAlias {
		if !looksLikeHeartbeat(r.topic) {
			r.source = none
		}
		noAlias = append(noAlias, r)
	}
	checkRows(t, NewIdentity("", true, ""), noAlias)
}

// With a separator that occurs inside "heartbeats", Identity's recursion goes
// through its own UpstreamTopic (Java virtual dispatch), not Default's.
func TestIdentityOriginalTopicDispatch(t *testing.T) {
	p := NewIdentity("a", true, "src")
	if got, ok := p.UpstreamTopic("heartbeats"); !ok || got != "rtbeats" {
		t.Fatalf("UpstreamTopic(heartbeats) = %q, %v; want rtbeats", got, ok)
	}
	if got := p.OriginalTopic("heartbeats"); got != "rtbeats" {
		t.Errorf("Identity OriginalTopic = %q, want rtbeats", got)
	}
	if got := NewDefault("a", true).OriginalTopic("heartbeats"); got != "ts" {
		t.Errorf("Default OriginalTopic = %q, want ts", got)
	}
}

func TestIsCycle(t *testing.T) {
	def := NewDefault("", true)
	tests := []struct {
		name   string
		p      Policy
		topic  string
		target string
		want   bool
	}{
		{"local topic", def, "orders", "us-west", false},
		{"remote from source", def, "us-east.orders", "us-west", false},
		{"came from target", def, "us-west.orders", "us-west", true},
		{"came from target two hops up", def, "us-east.us-west.orders", "us-west", true},
		{"remote heartbeats from target", def, "us-west.heartbeats", "us-west", true},
		{"empty source", def, ".foo", "", true},
		{"identity never cycles", NewIdentity("", true, "us-east"), "us-west.orders", "us-west", false},
		{"identity unset alias", NewIdentity("", true, ""), "orders", "us-west", false},
		{"identity heartbeats use default", NewIdentity("", true, "us-east"), "us-west.heartbeats", "us-west", true},
		{"identity alias is target", NewIdentity("", true, "us-west"), "orders", "us-west", true},
		{"looping policy", loopPolicy{def}, "a.b", "zzz", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsCycle(tt.p, tt.topic, tt.target); got != tt.want {
				t.Errorf("IsCycle(%q, %q) = %v, want %v", tt.topic, tt.target, got, tt.want)
			}
		})
	}
}

// loopPolicy is a misbehaving policy whose upstream chain is a 2-cycle.
type loopPolicy struct{ *Default }

func (loopPolicy) TopicSource(topic string) (string, bool) { return "x", true }
func (loopPolicy) UpstreamTopic(topic string) (string, bool) {
	if topic == "a.b" {
		return "b.a", true
	}
	return "a.b", true
}

func TestFromProps(t *testing.T) {
	tests := []struct {
		name        string
		props       map[string]string
		wantType    string
		checkpoints string // CheckpointsTopic("A")
		remote      string // FormatRemoteTopic("A", "t")
		source      string // TopicSource("t") under Identity
		wantErr     string
	}{
		{name: "empty", props: nil, wantType: "*policy.Default", checkpoints: "A.checkpoints.internal", remote: "A.t"},
		{name: "fqcn default", props: map[string]string{KeyClass: ClassDefault}, wantType: "*policy.Default", checkpoints: "A.checkpoints.internal", remote: "A.t"},
		{name: "short default", props: map[string]string{KeyClass: " DefaultReplicationPolicy "}, wantType: "*policy.Default", checkpoints: "A.checkpoints.internal", remote: "A.t"},
		{name: "separator", props: map[string]string{KeySeparator: "_"}, wantType: "*policy.Default", checkpoints: "A_checkpoints_internal", remote: "A_t"},
		{name: "separator flag off", props: map[string]string{KeySeparator: "_", KeyInternalSeparatorEnabled: "FALSE"}, wantType: "*policy.Default", checkpoints: "A.checkpoints.internal", remote: "A_t"},
		{name: "separator flag on", props: map[string]string{KeySeparator: "_", KeyInternalSeparatorEnabled: "true"}, wantType: "*policy.Default", checkpoints: "A_checkpoints_internal", remote: "A_t"},
		{name: "flag ignored without separator", props: map[string]string{KeyInternalSeparatorEnabled: "nonsense"}, wantType: "*policy.Default", checkpoints: "A.checkpoints.internal", remote: "A.t"},
		{name: "identity fqcn", props: map[string]string{KeyClass: ClassIdentity, KeySourceAlias: "us-east"}, wantType: "*policy.Identity", checkpoints: "A.checkpoints.internal", remote: "t", source: "us-east"},
		{name: "identity short no alias", props: map[string]string{KeyClass: "IdentityReplicationPolicy"}, wantType: "*policy.Identity", checkpoints: "A.checkpoints.internal", remote: "t", source: none},
		{name: "bad class", props: map[string]string{KeyClass: "com.example.MyPolicy"}, wantErr: `replication.policy.class: unsupported policy "com.example.MyPolicy"`},
		{name: "bad flag", props: map[string]string{KeySeparator: "_", KeyInternalSeparatorEnabled: "yes"}, wantErr: `replication.policy.internal.topic.separator.enabled: "yes" is not a boolean`},
		{name: "empty separator", props: map[string]string{KeySeparator: ""}, wantErr: "replication.policy.separator: must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := FromProps(tt.props)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := typeName(p); got != tt.wantType {
				t.Errorf("type = %s, want %s", got, tt.wantType)
			}
			if got := p.CheckpointsTopic("A"); got != tt.checkpoints {
				t.Errorf("CheckpointsTopic = %q, want %q", got, tt.checkpoints)
			}
			if got := p.FormatRemoteTopic("A", "t"); got != tt.remote {
				t.Errorf("FormatRemoteTopic = %q, want %q", got, tt.remote)
			}
			if tt.source != "" {
				if got := opt(p.TopicSource("t")); got != tt.source {
					t.Errorf("TopicSource(t) = %q, want %q", got, tt.source)
				}
			}
		})
	}
}

func typeName(p Policy) string {
	switch p.(type) {
	case *Default:
		return "*policy.Default"
	case *Identity:
		return "*policy.Identity"
	}
	return "?"
}

func TestJavaSplit(t *testing.T) {
	tests := []struct {
		in, sep string
		want    []string
	}{
		{"a.b", ".", []string{"a", "b"}},
		{"a.b..", ".", []string{"a", "b"}},
		{".a", ".", []string{"", "a"}},
		{"..", ".", []string{}},
		{"", ".", []string{}},
		{"a", ".", []string{"a"}},
		{"a--b--", "--", []string{"a", "b"}},
	}
	for _, tt := range tests {
		got := javaSplit(tt.in, tt.sep)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("javaSplit(%q, %q) = %q, want %q", tt.in, tt.sep, got, tt.want)
		}
	}
}
