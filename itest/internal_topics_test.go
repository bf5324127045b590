//go:build kafka

package itest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// TestInternalTopicRulesMatchRealMM2 creates, on us-east, topics named by
// ReplicationPolicy.isInternalTopic's rules before and after KAFKA-17200
// ("__" and "." prefixes are internal; ".internal" and "-internal" user
// topics no longer are) and names next to them ("_internal" with the
// default separator, a "connect-" name), runs the pinned Kafka's real MirrorMaker 2 with a topics
// filter matching all of them, and checks that the remote topics MM2
// creates on eu-west are exactly those mirrorctl's plan replicates, and that
// the plan notes the Connect-like name.
func TestInternalTopicRulesMatchRealMM2(t *testing.T) {
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	u := uniq(t)
	names := []string{"rules-" + u, "rules-" + u + ".internal", "rules-dash-" + u + "-internal", "__rules-" + u, ".rules-" + u,
		"rules-us-" + u + "_internal", "connect-rules-" + u}
	src := kadm.NewClient(newClient(t, east))
	dst := kadm.NewClient(newClient(t, west))
	for _, n := range names {
		if _, err := src.CreateTopic(ctx, 1, 1, nil, n); err != nil {
			t.Fatalf("create %s on us-east: %v", n, err)
		}
	}
	// Both MM2 and mirrorctl read the same file: topics matching every name.
	props := writeMM2Props(t, ".*rules-.*"+u+".*", "none-"+u, east, west)
	cfg, err := config.Load(props)
	if err != nil {
		t.Fatal(err)
	}
	fl, ok := cfg.Flow(usEast, euWest)
	if !ok {
		t.Fatal("no flow us-east->eu-west in the MM2 properties")
	}
	plan, err := replicate.PlanFlow(ctx, cmdutil.FlowConfig(cfg, fl), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	noted := map[string]bool{}
	for _, tp := range plan.Topics {
		if !strings.Contains(tp.Topic, u) {
			continue
		}
		if tp.Action != replicate.ActionSkip {
			want = append(want, tp.RemoteTopic)
		}
		noted[tp.Topic] = tp.Note != ""
	}
	sort.Strings(want)
	if !noted["connect-rules-"+u] || noted["rules-"+u] {
		t.Errorf("plan notes %v, want a note on connect-rules-%s only", noted, u)
	}

	startMM2(ctx, t, props)
	remotes := func(ctx context.Context) ([]string, error) {
		tds, err := dst.ListTopicsWithInternal(ctx)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, n := range tds.Names() {
			if strings.Contains(n, u) {
				out = append(out, n)
			}
		}
		sort.Strings(out)
		return out, nil
	}
	// MM2 creates every new remote topic of one refresh in one call: once
	// the ones it replicates are there, one more refresh (2 s) shows that
	// no other follows.
	pollUntil(ctx, t, 3*time.Minute, "MM2 created its remote topics", func(ctx context.Context) (bool, string) {
		got, err := remotes(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(got) >= len(want), fmt.Sprintf("remote topics %v", got)
	})
	// Absence cannot be polled for: wait two of MM2's 2 s topic refreshes,
	// in which a topic MM2 meant to create would show.
	time.Sleep(5 * time.Second)
	got, err := remotes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("real MM2 created %v on eu-west; mirrorctl's plan replicates %v", got, want)
	}
	t.Logf("MM2 and mirrorctl agree: %v replicated of %v", got, names)
}
