package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// SchemaVersion is the version of mirrorctl's JSON documents. It is bumped
// only on an incompatible change (a field removed, renamed or retyped); new
// fields and new JSON Lines message types may appear without a bump, so
// consumers must ignore what they do not know.
const SchemaVersion = 1

// Envelope is embedded (without a json tag) in every top-level JSON result
// struct so the document starts with "schema_version". Build it with
// NewEnvelope.
type Envelope struct {
	SchemaVersion int `json:"schema_version"`
}

// NewEnvelope returns an Envelope carrying SchemaVersion.
func NewEnvelope() Envelope { return Envelope{SchemaVersion: SchemaVersion} }

// WriteJSON writes v to w as one JSON document indented by two spaces and
// followed by a newline. HTML characters are not escaped. Output is stable:
// struct fields keep declaration order and map keys are sorted. Encoding
// errors are returned wrapped. C1 and bidirectional control characters,
// which encoding/json leaves raw, are written as \u escapes (SafeJSON).
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	if _, err := w.Write(SafeJSON(buf.Bytes())); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// WriteJSONLine writes v to w as one compact JSON object on a single line
// (JSON Lines), for streaming commands such as replicate; such events carry a
// "type" field chosen by the caller.
func WriteJSONLine(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON line: %w", err)
	}
	if _, err := w.Write(SafeJSON(buf.Bytes())); err != nil {
		return fmt.Errorf("writing JSON line: %w", err)
	}
	return nil
}

// ErrorDocument is the final object written to stderr when a command run
// with -o json fails: {"schema_version":1,"error":{"message":..,"exit_code":..}}.
type ErrorDocument struct {
	Envelope
	Error ErrorInfo `json:"error"`
}

// ErrorInfo is the body of an ErrorDocument.
type ErrorInfo struct {
	// Message is the error text as printed on stderr, without the
	// "mirrorctl: " prefix.
	Message string `json:"message"`
	// ExitCode is the process exit status (see `mirrorctl help exit-codes`).
	ExitCode int `json:"exit_code"`
}

// WriteJSONError writes an ErrorDocument for msg and code to w on one line.
func WriteJSONError(w io.Writer, msg string, code int) error {
	return WriteJSONLine(w, ErrorDocument{
		Envelope: NewEnvelope(),
		Error:    ErrorInfo{Message: msg, ExitCode: code},
	})
}
