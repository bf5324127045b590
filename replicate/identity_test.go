package replicate

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// TestRefusesTwoAliasesOfOneCluster: "us-east" and "us-east-again" reach the
// same cluster; a flow between them is refused before anything is written
// (before the fix each run mirrored the cluster into itself:
// us-east.us-east.orders, ...).
func TestRefusesTwoAliasesOfOneCluster(t *testing.T) {
	p := newClusterPair(t)
	orders := testkit.Name("orders")
	p.CreateTopic(t, testkit.East, orders, 1, nil)
	p.Produce(t, testkit.East, &kgo.Record{Topic: orders, Value: []byte("a1")})
	clients := testkit.NewClients(t, map[string][]string{
		testkit.East: p.Addrs(testkit.East), "us-east-again": p.Addrs(testkit.East), testkit.West: p.Addrs(testkit.West),
	})
	f := testFlow(testkit.East, "us-east-again")
	m, err := New(Options{Flows: []FlowConfig{f, testFlow(testkit.East, testkit.West)}, Clients: clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Run(testkit.Context(t))
	var ae *ClusterAliasError
	if !errors.As(err, &ae) {
		t.Fatalf("Run = %v, want a ClusterAliasError", err)
	}
	if strings.Join(ae.Aliases, ",") != "us-east,us-east-again" || ae.ClusterID == "" {
		t.Errorf("error names %v (cluster %q), want both aliases of the one cluster", ae.Aliases, ae.ClusterID)
	}
	if !strings.Contains(err.Error(), `"us-east" and "us-east-again"`) {
		t.Errorf("message %q does not name both aliases", err)
	}
	// Nothing was written anywhere: no remote topic, no internal topic.
	topics, lerr := p.Admin(t, testkit.East).ListTopicsWithInternal(testkit.Context(t))
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, name := range topics.Names() {
		if name != orders {
			t.Errorf("%s was created on %s although the run was refused", name, testkit.East)
		}
	}
	west, lerr := p.Admin(t, testkit.West).ListTopics(testkit.Context(t))
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(west.Names()) != 0 {
		t.Errorf("topics %v created on %s although the run was refused", west.Names(), testkit.West)
	}

	// Distinct clusters pass: the same flow to eu-west copies.
	runOnce(t, p, testFlow(testkit.East, testkit.West))
	if got := p.ReadAll(t, testkit.West, testkit.East+"."+orders); len(got[0]) != 1 {
		t.Errorf("copied %d records, want 1", len(got[0]))
	}
}

// TestRefusesIdentityFlowsWritingOneTopic: two sources with an "orders"
// each, IdentityReplicationPolicy, one target: both would write "orders" on
// the target. The run is refused naming both flows and the topic; a topic
// only one source has would not be a conflict.
func TestRefusesIdentityFlowsWritingOneTopic(t *testing.T) {
	p := newClusterPair(t)
	third, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID(testkit.Name("ap-south")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(third.Close)
	const south = "ap-south"
	clients := testkit.NewClients(t, map[string][]string{
		testkit.East: p.Addrs(testkit.East), testkit.West: p.Addrs(testkit.West), south: third.ListenAddrs(),
	})
	orders, onlyEast := testkit.Name("orders"), testkit.Name("east-only")
	p.CreateTopic(t, testkit.East, orders, 1, nil)
	p.CreateTopic(t, testkit.East, onlyEast, 1, nil)
	sadm, err := clients.Admin(south)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sadm.CreateTopic(testkit.Context(t), 2, 1, nil, orders); err != nil {
		t.Fatal(err)
	}
	identity := func(src string) FlowConfig {
		f := testFlow(src, testkit.West)
		f.Policy = policy.NewIdentity(".", true, src)
		return f
	}
	m, err := New(Options{Flows: []FlowConfig{identity(testkit.East), identity(south)}, Clients: clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Run(testkit.Context(t))
	var ce *RemoteTopicConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("Run = %v, want a RemoteTopicConflictError", err)
	}
	if ce.RemoteTopic != orders || ce.Target != testkit.West ||
		strings.Join(ce.Flows, ",") != south+"->"+testkit.West+","+testkit.East+"->"+testkit.West {
		t.Errorf("conflict %+v, want %s on %s from both flows", ce, orders, testkit.West)
	}
	if strings.Contains(err.Error(), onlyEast) {
		t.Errorf("a topic only one source has was reported: %v", err)
	}
	west, err := p.Admin(t, testkit.West).ListTopics(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(west.Names()) != 0 {
		t.Errorf("topics %v created on the target although the run was refused", west.Names())
	}
}
