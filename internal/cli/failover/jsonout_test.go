package failover

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestStreamedJSONMatchesWriteJSON checks that the streamed documents of
// failover and its verbs are byte for byte what output.WriteJSON writes for
// toResult and toVerbResult, on random plans and procedures: every field
// set or unset, nil and empty slices, strings that need escaping.
func TestStreamedJSONMatchesWriteJSON(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 31))
		proc := &failover.Procedure{}
		testkit.Fill(r, proc)
		proc.Type = []failover.Type{failover.TypePlanned, failover.TypeUnplanned, failover.TypeRestore}[r.IntN(3)]
		if r.IntN(4) == 0 {
			proc.Plans = nil
		}
		for i := range proc.Plans {
			if proc.Plans[i] == nil { // a procedure never holds a nil plan
				proc.Plans[i] = &failover.Plan{}
				testkit.Fill(r, proc.Plans[i])
			}
			proc.Plans[i].Direction = []failover.Direction{failover.Failover, failover.Failback}[r.IntN(2)]
			var want, got bytes.Buffer
			if err := output.WriteJSON(&want, toResult(proc.Plans[i])); err != nil {
				t.Fatal(err)
			}
			if err := writeResultJSON(&got, proc.Plans[i]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want.Bytes(), got.Bytes()) {
				t.Fatalf("seed %d plan %d: streamed plan differs from WriteJSON:\n%s", seed, i, firstDiff(want.Bytes(), got.Bytes()))
			}
		}
		var ev *failover.Evidence
		if r.IntN(2) == 0 {
			ev = &failover.Evidence{}
			testkit.Fill(r, ev)
		}
		var paths []string
		testkit.Fill(r, &paths)
		var want, got bytes.Buffer
		if err := output.WriteJSON(&want, toVerbResult(proc, ev, paths)); err != nil {
			t.Fatal(err)
		}
		if err := writeVerbResultJSON(&got, proc, ev, paths); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Fatalf("seed %d: streamed verb document differs from WriteJSON:\n%s", seed, firstDiff(want.Bytes(), got.Bytes()))
		}
	}
}

// firstDiff shows where a and b first differ, with some context.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	return "want: ..." + string(a[from:min(len(a), i+100)]) + "\n got: ..." + string(b[from:min(len(b), i+100)])
}
