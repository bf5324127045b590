package config

import (
	"strings"
	"testing"
)

// Every key of the key table has a row in the generated reference, and
// every one of mirrorctl's own keys says what it does.
func TestReferenceCoversEveryKey(t *testing.T) {
	var b strings.Builder
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	for k := range knownKeys {
		if !strings.Contains(b.String(), "| `"+k+"` |") {
			t.Errorf("reference has no row for %s", k)
		}
		if (strings.HasPrefix(k, "mirrorctl.") || k == KeySyncTopicACLsPrune) && ownKeyDocs[k] == "" {
			t.Errorf("mirrorctl's key %s has no entry in ownKeyDocs", k)
		}
	}
	for k := range ownKeyDocs {
		if _, ok := knownKeys[k]; !ok {
			t.Errorf("ownKeyDocs documents %s, which is not a known key", k)
		}
	}
}
