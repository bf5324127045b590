package lag

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestStreamedJSONMatchesWriteJSON checks that lag's streamed document is
// byte for byte what output.WriteJSON writes for the same Result, on
// random results: every field set or unset, nil and empty slices, strings
// that need escaping.
func TestStreamedJSONMatchesWriteJSON(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 17))
		var res Result
		testkit.Fill(r, &res)
		res.Envelope = output.NewEnvelope()
		var want, got bytes.Buffer
		if err := output.WriteJSON(&want, res); err != nil {
			t.Fatal(err)
		}
		if err := writeResultJSON(&got, res); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			a, b := want.Bytes(), got.Bytes()
			i := 0
			for i < len(a) && i < len(b) && a[i] == b[i] {
				i++
			}
			from := max(0, i-200)
			t.Fatalf("seed %d: streamed document differs from WriteJSON:\nwant: ...%s\n got: ...%s", seed, a[from:min(len(a), i+100)], b[from:min(len(b), i+100)])
		}
	}
}
