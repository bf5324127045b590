package output

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

type streamDoc struct {
	Envelope
	Name  string         `json:"name"`
	Rows  []streamRow    `json:"rows"`
	Empty []streamRow    `json:"empty"`
	Meta  map[string]any `json:"meta,omitempty"`
}

type streamRow struct {
	ID   int64      `json:"id"`
	Opt  *int64     `json:"opt"`
	OK   bool       `json:"ok"`
	Text string     `json:"text,omitempty"`
	At   time.Time  `json:"at"`
	Tags []string   `json:"tags"`
	Sub  *streamRow `json:"sub,omitempty"`
}

func writeRow(s *JSONStream, r streamRow) {
	s.BeginObject()
	s.Field("id")
	s.Int(r.ID)
	s.Field("opt")
	s.OptInt(r.Opt)
	s.Field("ok")
	s.Bool(r.OK)
	if r.Text != "" {
		s.Field("text")
		s.String(r.Text)
	}
	s.Field("at")
	s.Time(r.At)
	s.Field("tags")
	s.Value(r.Tags)
	if r.Sub != nil {
		s.Field("sub")
		writeRow(s, *r.Sub)
	}
	s.EndObject()
}

// TestJSONStreamMatchesWriteJSON writes one document both ways: nested
// objects and arrays, empty arrays, null, escapes, times, Value at depth.
func TestJSONStreamMatchesWriteJSON(t *testing.T) {
	seven := int64(-7)
	doc := streamDoc{Envelope: NewEnvelope(), Name: "plan \"x\" <b>&\u202e\u0085\n\xff", Empty: []streamRow{},
		Meta: map[string]any{"b": []int{1, 2}, "a": map[string]string{"k": "v\u2028"}},
		Rows: []streamRow{
			{ID: 1, Opt: &seven, OK: true, Text: "plain", At: time.Date(2026, 12, 6, 1, 2, 3, 400, time.UTC), Tags: []string{"a", "ü"}},
			{ID: 0, Tags: []string{}, Sub: &streamRow{ID: 2, Text: "tab\there", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))}},
		}}
	var want, got bytes.Buffer
	if err := WriteJSON(&want, doc); err != nil {
		t.Fatal(err)
	}
	s := NewJSONStream(&got)
	s.BeginObject()
	s.Field("schema_version")
	s.Int(int64(doc.SchemaVersion))
	s.Field("name")
	s.String(doc.Name)
	s.Field("rows")
	s.BeginArray()
	for _, r := range doc.Rows {
		writeRow(s, r)
	}
	s.EndArray()
	s.Field("empty")
	s.BeginArray()
	s.EndArray()
	s.Field("meta")
	s.Value(doc.Meta)
	s.EndObject()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if want.String() != got.String() {
		t.Fatalf("streamed:\n%s\nWriteJSON:\n%s", got.String(), want.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestJSONStreamErrors: a failed write and a value encoding/json refuses
// come back from Close.
func TestJSONStreamErrors(t *testing.T) {
	s := NewJSONStream(failWriter{})
	s.BeginArray()
	s.String(strings.Repeat("x", 100<<10))
	s.EndArray()
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close = %v, want the write error", err)
	}
	var b bytes.Buffer
	s = NewJSONStream(&b)
	s.BeginArray()
	s.Value(func() {})
	s.Time(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	s.EndArray()
	if err := s.Close(); err == nil || !strings.HasPrefix(err.Error(), "writing JSON: ") {
		t.Fatalf("Close = %v, want the encoding error", err)
	}
}
