package mm2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxStringLen is the longest STRING the Kafka wire format can hold, in bytes.
const MaxStringLen = 32767

// ErrUnsupportedVersion is wrapped by the DecodeError returned when a
// Checkpoint or Heartbeat value carries a version other than 0.
var ErrUnsupportedVersion = errors.New("unsupported value version")

// ErrTombstone is wrapped by the DecodeError returned for a nil key or a nil
// (tombstone) value. MM2's Java readers crash on these rather than skip them.
var ErrTombstone = errors.New("null (tombstone)")

// ErrNegativeLength is wrapped by the DecodeError returned when a STRING
// length prefix is negative (Kafka SchemaException).
var ErrNegativeLength = errors.New("negative string length")

// ShortError reports a field that needs more bytes than remain. It unwraps to
// io.ErrUnexpectedEOF.
type ShortError struct {
	Need int // bytes the field needs
	Have int // bytes left in the buffer
}

func (e *ShortError) Error() string { return fmt.Sprintf("need %d bytes, have %d", e.Need, e.Have) }

// Unwrap returns io.ErrUnexpectedEOF.
func (e *ShortError) Unwrap() error { return io.ErrUnexpectedEOF }

// DecodeError reports a record that could not be decoded: which record type
// ("checkpoint", "offset-sync", "heartbeat"), which part ("key" or "value"),
// which field (the MM2 schema field name, e.g. "offset"; empty when the whole
// part is missing) and why. Err is one of *ShortError, ErrNegativeLength,
// ErrUnsupportedVersion or ErrTombstone (possibly wrapped); use errors.Is / errors.As.
type DecodeError struct {
	Record string
	Part   string
	Field  string
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s %s: %v", e.Record, e.Part, e.Err)
	}
	return fmt.Sprintf("%s %s: field %q: %v", e.Record, e.Part, e.Field, e.Err)
}

// Unwrap returns the underlying cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeError reports a field that cannot be encoded (a STRING over
// MaxStringLen bytes).
type EncodeError struct {
	Record string
	Part   string
	Field  string
	Err    error
}

func (e *EncodeError) Error() string {
	return fmt.Sprintf("%s %s: field %q: %v", e.Record, e.Part, e.Field, e.Err)
}

// Unwrap returns the underlying cause.
func (e *EncodeError) Unwrap() error { return e.Err }

// reader reads wire fields from one part of one record. The first error sticks;
// later reads return zero values, so decoders can read all fields and check once.
type reader struct {
	buf    []byte
	record string
	part   string
	err    *DecodeError
}

func newReader(record, part string, b []byte) *reader {
	r := &reader{buf: b, record: record, part: part}
	if b == nil {
		r.err = &DecodeError{Record: record, Part: part, Err: ErrTombstone}
	}
	return r
}

func (r *reader) fail(field string, err error) {
	r.err = &DecodeError{Record: r.record, Part: r.part, Field: field, Err: err}
}

func (r *reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.buf) < n {
		r.fail(field, &ShortError{Need: n, Have: len(r.buf)})
		return nil
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b
}

func (r *reader) int16(field string) int16 {
	b := r.take(field, 2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) int32(field string) int32 {
	b := r.take(field, 4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) int64(field string) int64 {
	b := r.take(field, 8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// string reads a non-nullable STRING. Invalid UTF-8 is kept byte for byte (Java
// would substitute U+FFFD), so re-encoding reproduces the original key.
func (r *reader) string(field string) string {
	n := r.int16(field)
	if r.err != nil {
		return ""
	}
	if n < 0 {
		r.fail(field, fmt.Errorf("%w %d", ErrNegativeLength, n))
		return ""
	}
	return string(r.take(field, int(n)))
}

// version reads the INT16 value header and accepts only 0.
func (r *reader) version() {
	v := r.int16("version")
	if r.err == nil && v != 0 {
		r.fail("version", fmt.Errorf("%w %d (only version 0 is understood)", ErrUnsupportedVersion, v))
	}
}

func (r *reader) error() error {
	if r.err == nil {
		return nil
	}
	return r.err
}

// writer appends wire fields; the first error sticks.
type writer struct {
	buf    []byte
	record string
	part   string
	err    error
}

func newWriter(record, part string, size int) *writer {
	return &writer{buf: make([]byte, 0, size), record: record, part: part}
}

func (w *writer) int16(v int16) { w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(v)) }
func (w *writer) int32(v int32) { w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v)) }
func (w *writer) int64(v int64) { w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v)) }

func (w *writer) string(field, s string) {
	if len(s) > MaxStringLen {
		if w.err == nil {
			w.err = &EncodeError{Record: w.record, Part: w.part, Field: field,
				Err: fmt.Errorf("string is %d bytes, the maximum is %d", len(s), MaxStringLen)}
		}
		return
	}
	w.int16(int16(len(s)))
	w.buf = append(w.buf, s...)
}

func (w *writer) bytes() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	return w.buf, nil
}
