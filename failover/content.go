package failover

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate"
)

// Content identifies a record for matching it with its copy on another
// cluster: the copy keeps key, value, headers and (CreateTime) timestamp,
// while its offset differs. No header of mirrorctl's own is needed, so copies
// made by a real MirrorMaker 2 match too (and replicate.OriginHeader, which a
// stamping flow adds, is ignored).
type Content struct {
	// Offset of the record in its own partition.
	Offset int64
	// Timestamp in epoch milliseconds.
	Timestamp int64
	// LogAppendTime reports a broker-assigned timestamp (topic
	// message.timestamp.type=LogAppendTime); such a timestamp differs between
	// a record and its copy, so it is not compared.
	LogAppendTime bool
	// Sum is SHA-256 over the key, the value (each as a nil flag, a 4-byte
	// big-endian length and the bytes) and the [HeaderDigest].
	Sum [32]byte
}

// ContentOf returns the Content of r.
func ContentOf(r *kgo.Record) Content {
	h := sha256.New()
	writeBytes(h, r.Key)
	writeBytes(h, r.Value)
	d := HeaderDigest(r.Headers)
	h.Write(d[:])
	c := Content{Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), LogAppendTime: r.Attrs.TimestampType() == 1}
	h.Sum(c.Sum[:0])
	return c
}

// Matches reports whether c and o have the same key, value and headers and,
// unless either timestamp was assigned by a broker, the same timestamp.
func (c Content) Matches(o Content) bool {
	if c.Sum != o.Sum {
		return false
	}
	return c.LogAppendTime || o.LogAppendTime || c.Timestamp == o.Timestamp
}

// HeaderDigest is SHA-256 over each header in order: key length (4 bytes,
// big-endian), key, value length (4 bytes), value, and a nil flag (1 when
// the value is nil, else 0). The provenance header replicate.OriginHeader is
// left out: a stamping flow adds it to the copy, not to the original.
func HeaderDigest(hs []kgo.RecordHeader) [32]byte {
	h := sha256.New()
	var n [4]byte
	for _, hd := range hs {
		if hd.Key == replicate.OriginHeader {
			continue
		}
		binary.BigEndian.PutUint32(n[:], uint32(len(hd.Key)))
		h.Write(n[:])
		h.Write([]byte(hd.Key))
		binary.BigEndian.PutUint32(n[:], uint32(len(hd.Value)))
		h.Write(n[:])
		h.Write(hd.Value)
		if hd.Value == nil {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func writeBytes(h hash.Hash, b []byte) {
	var n [5]byte
	if b == nil {
		n[0] = 1
	}
	binary.BigEndian.PutUint32(n[1:], uint32(len(b)))
	h.Write(n[:])
	h.Write(b)
}
