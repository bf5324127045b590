package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"

	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// lagLike is a table shaped like lag's partition table, with long cluster
// aliases and topic names (the case that used to read "us-east…  us-east…").
func lagLike() *Table {
	t := NewTable("flow", "topic", "partition", "source end", "replicated", "records behind", "time behind", "target end", "from", "status", "reason")
	for p := range 3 {
		t.AddRow("us-east-production->eu-west-disaster-recovery", "us-east-production.orders.v2", fmt.Sprint(p),
			"1,316,443", "1,316,000", "443", "1.2s", "1,316,000", "progress", "ok", "")
	}
	t.AddRow("us-east-production->eu-west-disaster-recovery", "us-east-production.payments", "0",
		"20", "10", "10", "5m0s", "10", "offset-syncs", "breach",
		"records behind 10 exceeds --max-records 5 and the newest offset sync is older than --stale-after")
	return t
}

// translateLike and failoverLike are shaped like translate's and failover's
// tables with realistic names.
func translateLike() *Table {
	t := NewTable("group", "source topic", "topic", "partition", "source offset", "target offset", "mode", "sync", "rereads", "reason")
	t.AddRow("orders-app-eu-consumers", "orders.created.v2", "us-east.orders.created.v2", "0", "1316443", "1316101", "exact", "1316000->1316000", "0", "")
	t.AddRow("orders-app-eu-consumers", "orders.created.v2", "us-east.orders.created.v2", "1", "8", "", "checkpoint", "", "", "no offset sync at or below the committed offset; the group would start from auto.offset.reset on the target")
	return t
}

func failoverLike() *Table {
	t := NewTable("group", "topic", "partition", "source offset", "target offset", "current", "action", "mode", "rereads", "reason")
	t.AddRow("payments-settlement-worker", "us-east.payments.settled", "11", "90210", "90200", "", "commit", "exact", "0", "")
	t.AddRow("payments-settlement-worker", "us-east.payments.settled", "12", "5", "4", "7", "skip-rewind", "exact", "0", "the target's current offset 7 is ahead of 4; --allow-rewind moves it back")
	return t
}

func TestTableGoldenWidths(t *testing.T) {
	tables := map[string]func() *Table{"lag": lagLike, "translate": translateLike, "failover": failoverLike}
	for _, name := range []string{"lag", "translate", "failover"} {
		for _, width := range []int{80, 100, 200} {
			t.Run(fmt.Sprint(name, width), func(t *testing.T) {
				ios, _, out, _ := iostreams.Test()
				ios.SetStdoutTTY(true)
				ios.SetColorDisabled(true)
				ios.SetTerminalWidth(width)
				tb := tables[name]()
				if err := tb.Render(ios, FormatTable); err != nil {
					t.Fatal(err)
				}
				got := out.String()
				clitest.Golden(t, fmt.Sprintf("%s-%d.txt", name, width), got)
				for _, row := range tb.rows {
					for i, c := range row {
						if k := KindOf(tb.headers[i]); k == KindIdentity && !strings.Contains(got, c) {
							t.Errorf("%s at %d: identity cell %q was cut:\n%s", name, width, c, got)
						}
					}
				}
			})
		}
	}
}

func TestTableLagWidths(t *testing.T) {
	for _, width := range []int{80, 100, 200} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			ios, _, out, _ := iostreams.Test()
			ios.SetStdoutTTY(true)
			ios.SetColorDisabled(true)
			ios.SetTerminalWidth(width)
			tb := lagLike()
			if err := tb.Render(ios, FormatTable); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			// identity columns are intact on every line that holds them
			for _, want := range []string{"us-east-production->eu-west-disaster-recovery", "us-east-production.orders.v2", "us-east-production.payments", "1,316,443"} {
				if !strings.Contains(got, want) {
					t.Errorf("width %d: %q was cut:\n%s", width, want, got)
				}
			}
			if strings.Contains(got, "…") && width >= 200 {
				t.Errorf("width %d: something was cut although the table fits:\n%s", width, got)
			}
			// every word of the reason is still there, wrapped or not
			for _, word := range strings.Fields("records behind 10 exceeds --max-records 5 and the newest offset sync is older than --stale-after") {
				if !strings.Contains(got, word) {
					t.Errorf("width %d: reason word %q lost", width, word)
				}
			}
		})
	}
}

func TestTableNarrowsTextBeforeValues(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	ios.SetTerminalWidth(100)
	tb := NewTable("group", "value", "reason")
	tb.AddRow("orders-app", strings.Repeat("v", 30), strings.Repeat("word ", 12))
	if err := tb.Render(ios, FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if w := runewidth.StringWidth(ansiRE.ReplaceAllString(line, "")); w > 100 {
			t.Errorf("line wider than 100: %d %q", w, line)
		}
	}
	if !strings.Contains(out.String(), strings.Repeat("v", 30)) {
		t.Errorf("value cut while the reason could still wrap:\n%s", out)
	}
}

func TestTableWide(t *testing.T) {
	ios, _, out, _ := iostreams.Test() // not a TTY: --wide still aligns with a header
	ios.SetTerminalWidth(80)
	ios.SetWideTables(true)
	if err := lagLike().Render(ios, FormatTable); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], "FLOW ") {
		t.Fatalf("--wide off a TTY has no header: %q", lines[0])
	}
	if len(lines) != 6 { // header, 4 rows, trailing ""
		t.Fatalf("--wide wrapped or dropped lines (%d):\n%s", len(lines), out)
	}
	if !strings.Contains(out.String(), "older than --stale-after") || strings.Contains(out.String(), "…") {
		t.Fatalf("--wide narrowed something:\n%s", out)
	}
}

func TestTableTones(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	ios.SetColorEnabled(true)
	tb := NewTable("group", "action", "error")
	tb.AddRow("g1", "commit", "")
	tb.AddRow("g2", "skip-active", "")
	tb.AddRow("g3", "fail", "OFFSET_OUT_OF_RANGE")
	if err := tb.Render(ios, FormatTable); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"\x1b[36mcommit\x1b[0m", "\x1b[33mskip-active\x1b[0m", "\x1b[31mfail\x1b[0m", "\x1b[31mOFFSET_OUT_OF_RANGE\x1b[0m"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
	// columns stay aligned although escapes are invisible
	lines := strings.Split(got, "\n")
	plain := func(s string) string { return ansiRE.ReplaceAllString(s, "") }
	if strings.Index(plain(lines[1]), "commit") != strings.Index(plain(lines[0]), "ACTION") {
		t.Errorf("colour broke alignment:\n%s", plain(got))
	}
	// piped: no escapes at all
	ios2, _, out2, _ := iostreams.Test()
	if err := tb.Render(ios2, FormatTable); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out2.String(), "\x1b") {
		t.Errorf("escape sequences on a pipe: %q", out2)
	}
}

func TestStatusTone(t *testing.T) {
	for cell, want := range map[string]Tone{
		"ok": ToneOK, "in-sync": ToneOK, "commit": ToneAction, "skip-rewind": ToneWarn,
		"stale": ToneWarn, "breach": ToneError, "fail: differs": ToneError, "": ToneNone, "progress": ToneNone,
	} {
		if got := StatusTone(cell); got != want {
			t.Errorf("StatusTone(%q) = %v, want %v", cell, got, want)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"orders":                  "orders",
		`orders\..*`:              `orders\..*`,
		"evil\x1b[2J\x1b]0;pwn\a": `evil\x1b[2J\x1b]0;pwn\x07`,
		"a\\b\x1b":                `a\\b\x1b`,
		"tab\there\nnl":           `tab\there\nnl`,
		"c1\u009b31m":             `c1\u009b31m`,
		"bidi\u202egnp.exe":       `bidi\u202egnp.exe`,
		"bad\xffutf8":             `bad\xffutf8`,
		"héllo ✓":                 "héllo ✓",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeCSV("a\tb\nc\x1b"); got != "a\tb\nc\\x1b" {
		t.Errorf("escapeCSV = %q", got)
	}
}

func TestTableEscapesEveryFormat(t *testing.T) {
	for _, f := range []Format{FormatTable, FormatTSV, FormatCSV} {
		for _, tty := range []bool{false, true} {
			ios, _, out, _ := iostreams.Test()
			ios.SetStdoutTTY(tty)
			ios.SetColorDisabled(true)
			tb := NewTable("group", "metadata")
			tb.AddRow("evil\x1b[31m", "\x1b]52;c;Zm9v\a")
			if err := tb.Render(ios, f); err != nil {
				t.Fatal(err)
			}
			if strings.ContainsAny(out.String(), "\x1b\a") {
				t.Errorf("%s tty=%v: raw control characters: %q", f, tty, out)
			}
			if !strings.Contains(out.String(), `evil\x1b[31m`) {
				t.Errorf("%s tty=%v: group not shown escaped: %q", f, tty, out)
			}
		}
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aaaa bbbb cccccccccccc d", 6)
	want := []string{"aaaa", "bbbb", "cccccc", "cccccc", "d"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("wrap = %q, want %q", got, want)
	}
	for _, l := range got {
		if runewidth.StringWidth(l) > 6 {
			t.Fatalf("line %q wider than 6", l)
		}
	}
}

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestSafeJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSONLine(&buf, map[string]string{"g": "a\u009bb\u202ec\u2069d é ✓\x1b"}); err != nil {
		t.Fatal(err)
	}
	want := `{"g":"a\u009bb\u202ec\u2069d é ✓\u001b"}` + "\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["g"] != "a\u009bb\u202ec\u2069d é ✓\x1b" {
		t.Fatalf("round trip = %q, %v", back["g"], err)
	}
}

// A grid too wide even after text and values gave way prints the identity
// columns that hold one value in every row once above it, and lays out the
// rest; with one row, or when every column would go, nothing moves.
func TestTableHoistsOneValueColumns(t *testing.T) {
	render := func(width int, rows ...[]string) string {
		ios, _, out, _ := iostreams.Test()
		ios.SetStdoutTTY(true)
		ios.SetColorDisabled(true)
		ios.SetTerminalWidth(width)
		tb := NewTable("flow", "topic", "partition", "status")
		for _, r := range rows {
			tb.AddRow(r...)
		}
		if err := tb.Render(ios, FormatTable); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	const flow = "us-east-production->eu-west-disaster-recovery"
	a := []string{flow, "orders", "0", "ok"}
	b := []string{flow, "payments", "1", "ok"}
	got := render(40, a, b)
	want := "flow: " + flow + "\nTOPIC     PARTITION  STATUS\norders    0          ok\npayments  1          ok\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := render(200, a, b); !strings.HasPrefix(got, "FLOW ") {
		t.Fatalf("a table that fits moved a column:\n%s", got)
	}
	if got := render(40, a); !strings.HasPrefix(got, "FLOW ") {
		t.Fatalf("one row moved a column:\n%s", got)
	}
}
