package failover_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/audit"
)

// A commit whose answer is lost (REQUEST_TIMED_OUT) is re-read and
// reported with its true outcome, in the command's output and in the audit
// log alike: billing's commit landed (committed), ledger's did not (failed,
// exit 3).
func TestLostCommitAnswerInOutputAndAudit(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4, "ledger": 4})
	// billing: kfake stores the commit, then answers the error.
	e.West.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: "billing", Err: kerr.RequestTimedOut, Count: -1})
	// ledger: the same answer, nothing stored.
	e.West.ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		e.West.KeepControl()
		req := kreq.(*kmsg.OffsetCommitRequest)
		if req.Group != "ledger" {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.SetVersion(req.GetVersion())
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.RequestTimedOut.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	code, stdout, stderr := e.run(t, "failover", "--group", "billing", "--group", "ledger", "--apply", "--yes", "-o", "json")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (ledger not committed)\n%s\n%s", code, stdout, stderr)
	}
	type row struct {
		Partition int32  `json:"partition"`
		Outcome   string `json:"outcome"`
		Error     string `json:"error"`
	}
	type group struct {
		Group      string `json:"group"`
		Partitions []row  `json:"partitions"`
	}
	var out struct {
		Groups []group `json:"groups"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err, stdout)
	}
	want := map[string]string{"billing": "committed", "ledger": "failed"}
	check := func(where string, gs []group) {
		t.Helper()
		if len(gs) != 2 {
			t.Fatalf("%s: %d groups", where, len(gs))
		}
		for _, g := range gs {
			if len(g.Partitions) != 2 {
				t.Fatalf("%s: %s has %d partitions", where, g.Group, len(g.Partitions))
			}
			for _, r := range g.Partitions {
				note := "answer was lost"
				if g.Group == "ledger" {
					note = "re-read: not committed"
				}
				if r.Outcome != want[g.Group] || !strings.Contains(r.Error, note) {
					t.Errorf("%s: %s[%d] outcome %q error %q, want %s (%s)", where, g.Group, r.Partition, r.Outcome, r.Error, want[g.Group], note)
				}
			}
		}
	}
	check("output", out.Groups)
	end := lastAudit(t, e.audit)
	if end.Kind != audit.KindEnd || end.Status != audit.StatusPartial {
		t.Fatalf("audit end %s %s, want partial", end.Kind, end.Status)
	}
	var plan struct {
		Groups []group `json:"groups"`
	}
	if err := json.Unmarshal(end.Data, &plan); err != nil {
		t.Fatal(err, string(end.Data))
	}
	check("audit log", plan.Groups)
}

// With the source down, a named group without a checkpoint has an unknown
// position: `failover --apply` commits nothing to it and exits 3, with
// --allow-empty too (it may well have commits on the source).
func TestSourceDownNoCheckpointExits3(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	e.East.Close()
	for _, extra := range [][]string{nil, {"--allow-empty"}} {
		args := append([]string{"failover", "--group", "fresh", "--apply", "--yes"}, extra...)
		code, stdout, stderr := e.run(t, args...)
		if code != 3 || !strings.Contains(stderr, "group fresh") || !strings.Contains(stderr, "incomplete") {
			t.Errorf("%v: exit %d\n%s\n%s", extra, code, stdout, stderr)
		}
	}
	if offs, err := e.Admin(t, "eu-west").FetchOffsets(t.Context(), "fresh"); err == nil && len(offs) > 0 {
		t.Fatalf("fresh got commits on eu-west: %v", offs)
	}
	// billing, checkpointed by a live mirror, still moves.
	if code, _, stderr := e.run(t, "failover", "--group", "billing", "--apply", "--yes", "--checkpoint-max-age", "1h"); code != 0 {
		t.Fatalf("billing: exit %d %s", code, stderr)
	}
}
