package output

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr string
	}{
		{in: "", want: FormatTable},
		{in: "table", want: FormatTable},
		{in: "JSON", want: FormatJSON},
		{in: " csv ", want: FormatCSV},
		{in: "TSV", want: FormatTSV},
		{in: "yaml", wantErr: `invalid output format "yaml": valid values are {table|json|csv|tsv}`},
	}
	for _, tt := range tests {
		got, err := ParseFormat(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseFormat(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func sampleTable() *Table {
	tb := NewTable("key", "value", "file:line")
	tb.AddRow("bootstrap.servers", "a:9092,b:9092", "mm2.properties:2")
	tb.AddRow("topics", "orders\tand\nrefunds")
	tb.AddRow("héllo ✓", "x, \"y\"", "f:3")
	return tb
}

func TestTableRender(t *testing.T) {
	tests := []struct {
		name   string
		tty    bool
		color  bool
		width  int
		format Format
		want   string
	}{
		{
			name: "pipe is tab-separated without header, controls escaped", format: FormatTable,
			want: "bootstrap.servers\ta:9092,b:9092\tmm2.properties:2\n" +
				"topics\torders\\tand\\nrefunds\t\n" +
				"héllo ✓\tx, \"y\"\tf:3\n",
		},
		{
			name: "tsv has a snake_case header", format: FormatTSV,
			want: "key\tvalue\tfile_line\n" +
				"bootstrap.servers\ta:9092,b:9092\tmm2.properties:2\n" +
				"topics\torders\\tand\\nrefunds\t\n" +
				"héllo ✓\tx, \"y\"\tf:3\n",
		},
		{
			name: "tty aligned with upper-case headers", tty: true, width: 80, format: FormatTable,
			want: "KEY                VALUE                 FILE:LINE\n" +
				"bootstrap.servers  a:9092,b:9092         mm2.properties:2\n" +
				"topics             orders\\tand\\nrefunds\n" +
				"héllo ✓            x, \"y\"                f:3\n",
		},
		{
			name: "tty cuts the value column, never key or file:line", tty: true, width: 40, format: FormatTable,
			want: "KEY                VALUE         FILE:LINE\n" +
				"bootstrap.servers  a:9092,b:90…  mm2.properties:2\n" +
				"topics             orders\\tand…\n" +
				"héllo ✓            x, \"y\"        f:3\n",
		},
		{
			name: "csv has snake_case headers and keeps tabs and newlines quoted", tty: true, format: FormatCSV,
			want: "key,value,file_line\n" +
				"bootstrap.servers,\"a:9092,b:9092\",mm2.properties:2\n" +
				"topics,\"orders\tand\nrefunds\",\n" +
				"héllo ✓,\"x, \"\"y\"\"\",f:3\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, out, _ := iostreams.Test()
			ios.SetStdoutTTY(tt.tty)
			ios.SetColorDisabled(!tt.color)
			if tt.width > 0 {
				ios.SetTerminalWidth(tt.width)
			}
			if err := sampleTable().Render(ios, tt.format); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

func TestTableColorHeaders(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	if err := sampleTable().Render(ios, FormatTable); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(first, "\x1b[1mKEY\x1b[0m") {
		t.Fatalf("header not bold on a colour TTY: %q", first)
	}
}

func TestTableErrors(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	if err := sampleTable().Render(ios, FormatJSON); !errors.Is(err, ErrTableJSON) {
		t.Fatalf("Render(json) = %v, want ErrTableJSON", err)
	}
	tb := NewTable("a")
	tb.AddRow("1", "2")
	err := tb.Render(ios, FormatTable)
	if err == nil || err.Error() != "output: table row 1 has 2 cells, want 1 (a)" {
		t.Fatalf("long row error = %v", err)
	}
}

func TestWriteJSON(t *testing.T) {
	type result struct {
		Envelope
		Name  string         `json:"name"`
		Attrs map[string]int `json:"attrs"`
	}
	var buf bytes.Buffer
	err := WriteJSON(&buf, result{Envelope: NewEnvelope(), Name: "a<b>", Attrs: map[string]int{"z": 1, "a": 2}})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"schema_version\": 1,\n  \"name\": \"a<b>\",\n  \"attrs\": {\n    \"a\": 2,\n    \"z\": 1\n  }\n}\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
}

func TestWriteJSONError(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSONError(&buf, `bad "x"`, 2); err != nil {
		t.Fatal(err)
	}
	want := `{"schema_version":1,"error":{"message":"bad \"x\"","exit_code":2}}` + "\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
}

func TestStyles(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	st := NewStyles(ios)
	for _, got := range []string{st.OK("ok"), st.Warn("ok"), st.Error("ok"), st.Bold("ok"), st.Header("ok"), st.Muted("ok")} {
		if got != "ok" {
			t.Fatalf("colour off: got %q, want plain", got)
		}
	}
	if st.SuccessIcon() != "✓" || st.WarningIcon() != "!" || st.FailureIcon() != "✗" {
		t.Fatal("plain icons wrong")
	}
	ios.SetColorEnabled(true)
	st = NewStyles(ios)
	if got := st.OK("ok"); got != "\x1b[32mok\x1b[0m" {
		t.Fatalf("colour on: OK = %q", got)
	}
	if got := st.Error("no"); got != "\x1b[31mno\x1b[0m" {
		t.Fatalf("colour on: Error = %q", got)
	}
	ios.SetColorDisabled(true) // --no-color wins over forcing
	if got := NewStyles(ios).Warn("w"); got != "w" {
		t.Fatalf("no-color: Warn = %q", got)
	}
}

func TestTimeAndRelative(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		t    time.Time
		want string
	}{
		{now, "just now"},
		{now.Add(-500 * time.Millisecond), "just now"},
		{now.Add(-1 * time.Second), "1 second ago"},
		{now.Add(-59 * time.Second), "59 seconds ago"},
		{now.Add(-90 * time.Second), "1 minute ago"},
		{now.Add(-3 * time.Hour), "3 hours ago"},
		{now.Add(2 * time.Hour), "in 2 hours"},
		{now.Add(-49 * time.Hour), "2 days ago"},
		{now.Add(-40 * 24 * time.Hour), "2024-03-22"},
	}
	for _, tt := range tests {
		if got := Relative(tt.t, now); got != tt.want {
			t.Errorf("Relative(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
	ios, _, _, _ := iostreams.Test()
	at := time.Date(2024, 5, 1, 14, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	if got := Time(ios, at, now); got != "2024-05-01T12:00:00Z" {
		t.Errorf("Time off TTY = %q, want RFC3339 UTC", got)
	}
	ios.SetStdoutTTY(true)
	if got := Time(ios, now.Add(-5*time.Minute), now); got != "5 minutes ago" {
		t.Errorf("Time on TTY = %q", got)
	}
	if got := Time(ios, time.Time{}, now); got != "" {
		t.Errorf("zero time = %q, want empty", got)
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		n      int64
		tty    string
		notTTY string
	}{
		{0, "0", "0"},
		{999, "999", "999"},
		{1000, "1,000", "1000"},
		{1234567, "1,234,567", "1234567"},
		{-1234567, "-1,234,567", "-1234567"},
		{123456, "123,456", "123456"},
	}
	ios, _, _, _ := iostreams.Test()
	for _, tt := range tests {
		ios.SetStdoutTTY(false)
		if got := Count(ios, tt.n); got != tt.notTTY {
			t.Errorf("Count(%d) off TTY = %q, want %q", tt.n, got, tt.notTTY)
		}
		ios.SetStdoutTTY(true)
		if got := Count(ios, tt.n); got != tt.tty {
			t.Errorf("Count(%d) on TTY = %q, want %q", tt.n, got, tt.tty)
		}
	}
}
