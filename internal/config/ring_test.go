package config

import (
	"strings"
	"testing"
)

// Rings of three clusters or more under IdentityReplicationPolicy are
// refused like the two-cluster loop when every flow of the ring takes a
// common topic (issue: three flows a->b, b->c, c->a with topics = y turned
// 100 records into tens of thousands); a ring broken by a disabled flow, by
// one flow's list, or under DefaultReplicationPolicy is accepted.
func TestIdentityRings(t *testing.T) {
	const identity = "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
	clusters := func(names ...string) string {
		s := "clusters = " + strings.Join(names, ", ") + "\n"
		for i, n := range names {
			s += n + ".bootstrap.servers = 127.0.0.1:" + string(rune('1'+i)) + "\n"
		}
		return s
	}
	abc := clusters("a", "b", "c") + "topics = y\na->b.enabled = true\nb->c.enabled = true\n"
	tests := []struct {
		name, text string
		wantErr    string // "" for valid
		wantWarn   string
	}{
		{"three-cluster ring", abc + "c->a.enabled = true\n" + identity,
			`r.properties:5: topics: flows a->b, b->c, c->a form the ring a->b->c->a under IdentityReplicationPolicy and all replicate topics such as "y"`, ""},
		{"four-cluster ring", clusters("a", "b", "c", "d") + "a->b.enabled = true\nb->c.enabled = true\nc->d.enabled = true\nd->a.enabled = true\nd->a.topics = orders.*\n" + identity,
			`r.properties:10: d->a.topics: flows a->b, b->c, c->d, d->a form the ring a->b->c->d->a under IdentityReplicationPolicy and all replicate topics such as "orders"`, ""},
		{"broken by a disabled flow", abc + "c->a.enabled = false\n" + identity, "", ""},
		{"broken by one flow's list", abc + "c->a.enabled = true\nc->a.topics = z\n" + identity, "", ""},
		{"broken by one flow's exclude", abc + "c->a.enabled = true\nc->a.topics.exclude = y\n" + identity, "", ""},
		{"prefixed names end the ring", abc + "c->a.enabled = true\n", "", ""},
		{"shared prefixes only warn", clusters("a", "b", "c") + "a->b.enabled = true\na->b.topics = ab.*c\nb->c.enabled = true\nb->c.topics = abd.*e\nc->a.enabled = true\nc->a.topics = ab.*f\n" + identity,
			"", `flows a->b, b->c, c->a form the ring a->b->c->a under IdentityReplicationPolicy and each flow's topic items share a prefix`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("r.properties", strings.NewReader(tt.text), WithEnv(noEnv))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			var warned []string
			for _, w := range c.Warnings {
				if strings.Contains(w.Msg, "ring") {
					warned = append(warned, w.String())
				}
			}
			switch {
			case tt.wantWarn == "" && len(warned) > 0:
				t.Fatalf("unexpected ring warning %v", warned)
			case tt.wantWarn != "" && (len(warned) != 1 || !strings.Contains(warned[0], tt.wantWarn)):
				t.Fatalf("ring warnings %v, want one with %s", warned, tt.wantWarn)
			}
		})
	}
}
