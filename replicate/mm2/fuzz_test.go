package mm2

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func seed(f *testing.F, key, value string) {
	k, _ := hex.DecodeString(key)
	v, _ := hex.DecodeString(value)
	f.Add(k, v)
}

// prefixOf checks that re-encoding reproduces the bytes the decoder consumed
// (trailing bytes are ignored on decode, so the input may be longer).
func prefixOf(t *testing.T, part string, re, in []byte) {
	t.Helper()
	if !bytes.HasPrefix(in, re) {
		t.Fatalf("%s: re-encoded %x is not a prefix of input %x", part, re, in)
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	seed(f, ckKeyRemote, ckValEmpty)
	seed(f, ckKeyLocal, ckValM)
	seed(f, ckKeyLocal+"00", ckValM+"ff")
	seed(f, "ffff", "0001")
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, err := DecodeCheckpoint(key, value)
		if err != nil {
			return
		}
		k, err := c.MarshalKey()
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.MarshalValue()
		if err != nil {
			t.Fatal(err)
		}
		prefixOf(t, "key", k, key)
		prefixOf(t, "value", v, value)
		c2, err := DecodeCheckpoint(k, v)
		if err != nil || c2 != c {
			t.Fatalf("round trip: %+v, %v; want %+v", c2, err, c)
		}
	})
}

func FuzzDecodeOffsetSync(f *testing.F) {
	seed(f, osKey, osVal)
	seed(f, osKey+"00", osVal+"ff")
	seed(f, "8000", "")
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s, err := DecodeOffsetSync(key, value)
		if err != nil {
			return
		}
		k, err := s.MarshalKey()
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.MarshalValue()
		if err != nil {
			t.Fatal(err)
		}
		prefixOf(t, "key", k, key)
		prefixOf(t, "value", v, value)
		s2, err := DecodeOffsetSync(k, v)
		if err != nil || s2 != s {
			t.Fatalf("round trip: %+v, %v; want %+v", s2, err, s)
		}
	})
}

func FuzzDecodeHeartbeat(f *testing.F) {
	seed(f, hbKey, hbVal)
	seed(f, hbKey+"00", hbVal+"ff")
	seed(f, "0000", "ffff")
	f.Fuzz(func(t *testing.T, key, value []byte) {
		h, err := DecodeHeartbeat(key, value)
		if err != nil {
			return
		}
		k, err := h.MarshalKey()
		if err != nil {
			t.Fatal(err)
		}
		v, err := h.MarshalValue()
		if err != nil {
			t.Fatal(err)
		}
		prefixOf(t, "key", k, key)
		prefixOf(t, "value", v, value)
		h2, err := DecodeHeartbeat(k, v)
		if err != nil || h2 != h {
			t.Fatalf("round trip: %+v, %v; want %+v", h2, err, h)
		}
	})
}
