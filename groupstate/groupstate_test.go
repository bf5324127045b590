package groupstate

import (
	"errors"
	"strings"
	"testing"
)

func TestIdleAndRefusal(t *testing.T) {
	member := Member{MemberID: "m1", ClientID: "billing-1", ClientHost: "/10.0.0.7", Protocol: TypeConsumer}
	tests := []struct {
		name    string
		st      State
		idle    bool
		refusal string
	}{
		{"absent", State{Group: "g", State: StateAbsent}, true, ""},
		{"empty classic", State{Group: "g", Type: TypeClassic, State: "Empty"}, true, ""},
		{"empty consumer", State{Group: "g", Type: TypeConsumer, State: "Empty"}, true, ""},
		{"dead", State{Group: "g", Type: TypeClassic, State: "Dead"}, true, ""},
		{"stable consumer", State{Group: "g", Type: TypeConsumer, State: "Stable", Members: []Member{member}}, false,
			"group g is Stable on eu-west (1 members); stop its consumers first: billing-1@10.0.0.7 (consumer)"},
		{"empty with a member", State{Group: "g", Type: TypeClassic, State: "Empty", Members: []Member{member}}, false, "group g is Empty on eu-west (1 members)"},
		{"reconciling, no member listed", State{Group: "g", Type: TypeConsumer, State: "Reconciling"}, false, "group g is Reconciling on eu-west (0 members)"},
		{"share", State{Group: "g", Type: TypeShare, State: "Empty"}, false, "group g is a share group on eu-west"},
		{"streams", State{Group: "g", Type: TypeStreams, State: "Empty"}, false, "group g is a streams group on eu-west"},
		{"unknown", State{Group: "g", State: "unknown", Err: errors.New("list groups: boom")}, false, "state of group g on eu-west unknown: list groups: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Idle(); got != tt.idle {
				t.Fatalf("Idle() = %v, want %v", got, tt.idle)
			}
			got := tt.st.Refusal("eu-west")
			if (tt.refusal == "") != (got == "") || !strings.HasPrefix(got, tt.refusal) {
				t.Fatalf("Refusal() = %q, want prefix %q", got, tt.refusal)
			}
		})
	}
}

func TestMemberListIsBounded(t *testing.T) {
	var st State
	for i := 0; i < 12; i++ {
		st.Members = append(st.Members, Member{MemberID: "m", ClientID: "c", ClientHost: "h", Protocol: TypeClassic})
	}
	if got := st.MemberList(); strings.Count(got, "c@h (classic)") != 10 || !strings.HasSuffix(got, "and 2 more") {
		t.Fatalf("MemberList() = %q", got)
	}
}

func TestFingerprint(t *testing.T) {
	a := State{Type: TypeClassic, State: "Empty"}
	b := State{Type: TypeClassic, State: "Stable", Members: []Member{{MemberID: "x"}}}
	if a.Fingerprint() == b.Fingerprint() || (State{Err: errors.New("x")}).Fingerprint() != "unknown" {
		t.Fatal("fingerprints do not tell states apart")
	}
}
