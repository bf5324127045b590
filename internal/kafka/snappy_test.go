package kafka

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// snappyInputs are batch bodies around the 32 KiB block size: text that
// compresses, and random bytes that do not.
func snappyInputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	text := func(n int) []byte {
		b := make([]byte, 0, n)
		for len(b) < n {
			b = append(b, `{"customer":"c-0001","status":"paid","amount":1234},`...)
		}
		return b[:n]
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	return map[string][]byte{
		"1 byte":             text(1),
		"100 B":              text(100),
		"block - 1":          text(xerialBlock - 1),
		"one block":          text(xerialBlock),
		"block + 1":          text(xerialBlock + 1),
		"1 MiB text":         text(1 << 20),
		"1 MiB random":       random(1 << 20),
		"3 blocks + 7 bytes": random(3*xerialBlock + 7),
	}
}

// unframe checks xerial framing by hand: the header, then blocks that each
// decode to at most 32 KiB; it returns the decoded blocks joined.
func unframe(t *testing.T, framed []byte) []byte {
	t.Helper()
	if !bytes.HasPrefix(framed, xerialHeader) {
		t.Fatalf("no xerial header: % x", framed[:min(len(framed), 16)])
	}
	var out []byte
	for rest := framed[len(xerialHeader):]; len(rest) > 0; {
		if len(rest) < 4 {
			t.Fatalf("%d bytes left, short of a block length", len(rest))
		}
		n := int(binary.BigEndian.Uint32(rest))
		if n > len(rest)-4 {
			t.Fatalf("block of %d bytes, %d left", n, len(rest)-4)
		}
		block, err := s2.Decode(nil, rest[4:4+n])
		if err != nil {
			t.Fatalf("block: %v", err)
		}
		if len(block) > xerialBlock {
			t.Fatalf("block decodes to %d bytes, over %d", len(block), xerialBlock)
		}
		out = append(out, block...)
		rest = rest[4+n:]
	}
	return out
}

func TestXerialSnappyRoundTrip(t *testing.T) {
	dec := kgo.DefaultDecompressor()
	var buf bytes.Buffer
	for name, in := range snappyInputs() {
		t.Run(name, func(t *testing.T) {
			buf.Reset() // kgo reuses the pooled buffer the same way
			framed, codec := xerialSnappy{}.Compress(&buf, in)
			if codec != kgo.CodecSnappy {
				t.Fatalf("codec %v, want snappy", codec)
			}
			if got := unframe(t, framed); !bytes.Equal(got, in) {
				t.Fatalf("blocks decode to %d bytes that differ from the %d given", len(got), len(in))
			}
			got, err := dec.Decompress(framed, kgo.CodecSnappy)
			if err != nil {
				t.Fatalf("kgo's decoder: %v", err)
			}
			if !bytes.Equal(got, in) {
				t.Fatalf("kgo's decoder gives %d bytes that differ from the %d given", len(got), len(in))
			}
		})
	}
}

// The framed batch is written into the pooled buffer kgo passes, not into
// a new array: the result starts where the buffer's free space does.
func TestXerialSnappyUsesBuffer(t *testing.T) {
	for name, in := range snappyInputs() {
		var buf bytes.Buffer
		framed, _ := xerialSnappy{}.Compress(&buf, in)
		if free := buf.AvailableBuffer()[:1]; &framed[0] != &free[0] {
			t.Errorf("%s: the framed batch is not in the buffer passed", name)
		}
		if name == "1 MiB text" && len(framed) >= len(in)/4 {
			t.Errorf("1 MiB of repeated text framed into %d bytes: not compressed", len(framed))
		}
	}
}

func TestOptionsSnappyFraming(t *testing.T) {
	for _, props := range []map[string]string{nil, {"compression.type": "snappy"}, {"compression.type": "SNAPPY"}} {
		cl, _ := build(t, props)
		if got, ok := cl.OptValue(kgo.WithCompressor).(xerialSnappy); !ok {
			t.Errorf("%v: compressor %T (%v), want xerialSnappy", props, cl.OptValue(kgo.WithCompressor), got)
		}
	}
	for _, codec := range []string{"none", "gzip", "lz4", "zstd"} {
		cl, _ := build(t, map[string]string{"compression.type": codec})
		if _, ok := cl.OptValue(kgo.WithCompressor).(xerialSnappy); ok {
			t.Errorf("compression.type %s: the snappy framing replaced kgo's %s compressor", codec, codec)
		}
	}
}

func FuzzXerialSnappy(f *testing.F) {
	for _, in := range snappyInputs() {
		if len(in) <= 4*xerialBlock {
			f.Add(in)
		}
	}
	dec := kgo.DefaultDecompressor()
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return // kgo never compresses an empty batch
		}
		var buf bytes.Buffer
		framed, _ := xerialSnappy{}.Compress(&buf, in)
		if got := unframe(t, framed); !bytes.Equal(got, in) {
			t.Fatalf("blocks decode to %d bytes that differ from the %d given", len(got), len(in))
		}
		got, err := dec.Decompress(framed, kgo.CodecSnappy)
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("kgo's decoder: %v (%d bytes of %d)", err, len(got), len(in))
		}
	})
}
