package auditcmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// run executes mirrorctl in-process and returns the exit code, stdout and
// stderr.
func run(t *testing.T, tty bool, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(tty)
	ios.SetStderrTTY(tty)
	code := cli.Run(context.Background(), ios, append(args, "--no-color"), nil)
	return code, out.String(), errOut.String()
}

// writeLog writes two operations (one ok, one failed with a secret in its
// command line and error) and one unfinished begin, and returns the path.
func writeLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	op, err := l.Begin(ctx, "failover apply", []string{"failover", "apply", "--group", "g1"}, "d1", map[string]any{"groups": 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.End(ctx, "", map[string]any{"committed": 3}, nil); err != nil {
		t.Fatal(err)
	}
	op, err = l.Begin(ctx, "acl apply", []string{"acl", "apply", "--sasl-password", "hunter2"}, "d1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.End(ctx, "", nil, errors.New("sasl.jaas.config=hunter2 rejected")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Begin(ctx, "failover apply", nil, "d1", nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestShow(t *testing.T) {
	path := writeLog(t)
	code, out, errOut := run(t, false, "audit", "show", "--audit-log", path)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d rows, want 5:\n%s", len(lines), out)
	}
	wantCells := [][]string{
		{"1", "begin", "failover apply", ""},
		{"2", "end", "failover apply", "ok"},
		{"3", "begin", "acl apply", ""},
		{"4", "end", "acl apply", "failed"},
		{"5", "begin", "failover apply", ""},
	}
	for i, line := range lines {
		c := strings.Split(line, "\t")
		w := wantCells[i]
		if len(c) != 6 || c[0] != w[0] || c[2] != w[1] || c[3] != w[2] || c[4] != w[3] || len(c[5]) != 32 {
			t.Errorf("row %d = %q, want %q", i+1, c, w)
		}
		if _, err := time.Parse(time.RFC3339, c[1]); err != nil {
			t.Errorf("row %d time %q: %v", i+1, c[1], err)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Fatal("secret in output")
	}

	// JSON: the envelope and whole entries, secrets masked.
	code, out, _ = run(t, false, "audit", "show", "-o", "json", "--audit-log", path)
	var doc struct {
		SchemaVersion int           `json:"schema_version"`
		Entries       []audit.Entry `json:"entries"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.SchemaVersion != 1 || len(doc.Entries) != 5 {
		t.Fatalf("exit %d, json:\n%s", code, out)
	}
	if got := doc.Entries[2].Args; strings.Join(got, " ") != "acl apply --sasl-password **redacted**" {
		t.Errorf("args %q", got)
	}
	var data bytes.Buffer
	_ = json.Compact(&data, doc.Entries[0].Data)
	if doc.Entries[3].Error != "sasl.jaas.config=**redacted** rejected" || data.String() != `{"groups":1}` {
		t.Errorf("entries %+v", doc.Entries)
	}
	if strings.Contains(out, "hunter2") {
		t.Fatal("secret in JSON output")
	}

	// CSV has a header and RFC3339 times.
	code, out, _ = run(t, false, "audit", "show", "-o", "csv", "--audit-log", path)
	if code != 0 || !strings.HasPrefix(out, "seq,time,kind,command,status,op\n1,") || strings.Count(out, "\n") != 6 {
		t.Fatalf("exit %d csv:\n%s", code, out)
	}

	// --since: nothing is older than an hour, and the flag is validated.
	code, out, _ = run(t, false, "audit", "show", "--since", "1h", "--audit-log", path)
	if code != 0 || strings.Count(out, "\n") != 5 {
		t.Fatalf("--since 1h: exit %d:\n%s", code, out)
	}
	code, _, errOut = run(t, false, "audit", "show", "--since", "yesterday", "--audit-log", path)
	if code != 2 || !strings.Contains(errOut, `--since: invalid duration "yesterday"`) {
		t.Fatalf("bad --since: exit %d, stderr %q", code, errOut)
	}
}

// TestShowSince uses a hand-written log (show does not verify) with entries
// hours apart.
func TestShowSince(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	now := time.Now().UTC()
	var buf bytes.Buffer
	for i, age := range []time.Duration{72 * time.Hour, 3 * time.Hour, 30 * time.Minute} {
		b, _ := json.Marshal(audit.Entry{Seq: int64(i + 1), Time: now.Add(-age), Kind: audit.KindNote, Op: "op", Command: "c"})
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		since string
		want  []string // seq column
	}{
		{"", []string{"1", "2", "3"}},
		{"7d", []string{"1", "2", "3"}},
		{"2d", []string{"2", "3"}},
		{"2h", []string{"3"}},
		{"10m", nil},
	}
	for _, tt := range tests {
		args := []string{"audit", "show", "-o", "csv", "--audit-log", path}
		if tt.since != "" {
			args = append(args, "--since", tt.since)
		}
		code, out, _ := run(t, false, args...)
		var seqs []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			seqs = append(seqs, strings.SplitN(line, ",", 2)[0])
		}
		if code != 0 || strings.Join(seqs, " ") != strings.Join(tt.want, " ") {
			t.Errorf("--since %q: exit %d, seqs %v, want %v", tt.since, code, seqs, tt.want)
		}
	}
}

func TestShowMissingAndGarbage(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.jsonl")
	code, out, errOut := run(t, true, "audit", "show", "--audit-log", missing)
	if code != 0 || out != "" || errOut != "no audit log at "+missing+" yet\n" {
		t.Fatalf("missing: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("show created the audit log")
	}
	path := writeLog(t)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("garbage\n")
	_ = f.Close()
	code, out, errOut = run(t, false, "audit", "show", "--audit-log", path)
	if code != 0 || strings.Count(out, "\n") != 5 || !strings.Contains(errOut, "warning: "+path+":6: not an audit entry") {
		t.Fatalf("garbage: exit %d, stdout:\n%s\nstderr %q", code, out, errOut)
	}
}

func TestVerify(t *testing.T) {
	path := writeLog(t)
	// Intact, on a TTY: the check mark, and the unfinished operation.
	code, out, errOut := run(t, true, "audit", "verify", "--audit-log", path)
	if code != 0 || out != "" || !strings.Contains(errOut, "✓ 5 entries, chain intact, head 5:") ||
		!strings.Contains(errOut, "warning: "+path+":5: failover apply (operation ") {
		t.Fatalf("intact: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// MIRRORCTL_AUDIT_LOG selects the file; JSON result.
	t.Setenv("MIRRORCTL_AUDIT_LOG", path)
	code, out, _ = run(t, false, "audit", "verify", "-o", "json")
	var res struct {
		SchemaVersion int             `json:"schema_version"`
		File          string          `json:"file"`
		Entries       int             `json:"entries"`
		Intact        bool            `json:"intact"`
		Problems      []audit.Problem `json:"problems"`
		Unfinished    []struct {
			Seq int64 `json:"seq"`
		} `json:"unfinished"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.SchemaVersion != 1 || res.File != path ||
		res.Entries != 5 || !res.Intact || res.Problems == nil || len(res.Problems) != 0 || len(res.Unfinished) != 1 || res.Unfinished[0].Seq != 5 {
		t.Fatalf("json intact: exit %d:\n%s", code, out)
	}

	// Modify entry 2: exit 3, each problem with its line.
	raw, _ := os.ReadFile(path)
	tampered := bytes.Replace(raw, []byte(`"committed":3`), []byte(`"committed":9`), 1)
	if err := os.WriteFile(path, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, false, "audit", "verify")
	wantOut := "2\t2\thash does not match the line: this entry was modified\n" +
		"3\t3\tprev does not match line 2: that line was modified, or entries were removed, inserted or reordered\n"
	if code != 3 || out != wantOut || !strings.Contains(errOut, "audit log "+path+" is broken: 2 problems in 5 lines") {
		t.Fatalf("modified: exit %d, stdout:\n%s\nstderr %q", code, out, errOut)
	}
	code, out, errOut = run(t, false, "audit", "verify", "-o", "json")
	if code != 3 || json.Unmarshal([]byte(out), &res) != nil || res.Intact || len(res.Problems) != 2 ||
		res.Problems[0] != (audit.Problem{Line: 2, Seq: 2, Msg: "hash does not match the line: this entry was modified"}) {
		t.Fatalf("json modified: exit %d:\n%s\nstderr %q", code, out, errOut)
	}

	// Reordered lines.
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	lines[0], lines[1] = lines[1], lines[0]
	if err := os.WriteFile(path, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ = run(t, false, "audit", "verify"); code != 3 || !strings.HasPrefix(out, "1\t2\tseq 2, want 1") {
		t.Fatalf("reordered: exit %d:\n%s", code, out)
	}

	// A missing file is an error (exit 1), not an intact chain.
	code, _, errOut = run(t, false, "audit", "verify", "--audit-log", filepath.Join(t.TempDir(), "none"))
	if code != 1 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("missing: exit %d, stderr %q", code, errOut)
	}
}

func TestParseDurationAndHelp(t *testing.T) {
	code, out, _ := run(t, false, "audit", "--help")
	if code != 0 || !strings.Contains(out, "show        List the entries of the audit log") || !strings.Contains(out, "--audit-log string") {
		t.Fatalf("help exit %d:\n%s", code, out)
	}
}

// TestVerifyExpectHead removes the last entry of a log: verify alone still
// passes (the chain is valid), and --expect-head with the head it printed
// before fails with exit 3, in the table and in JSON.
func TestVerifyExpectHead(t *testing.T) {
	path := writeLog(t)
	code, out, _ := run(t, false, "audit", "verify", "--audit-log", path, "-o", "json")
	var res struct {
		Intact bool       `json:"intact"`
		Head   audit.Head `json:"head"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Head.Seq != 5 || len(res.Head.Hash) != 64 {
		t.Fatalf("head: exit %d:\n%s", code, out)
	}
	head := res.Head.String()
	if code, _, errOut := run(t, false, "audit", "verify", "--audit-log", path, "--expect-head", head[:len("5:")+12]); code != 0 {
		t.Fatalf("own head (prefix) rejected: exit %d, %s", code, errOut)
	}
	raw, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(raw, []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(lines[:len(lines)-2], nil), 0o600); err != nil { // last entry gone
		t.Fatal(err)
	}
	if code, _, errOut := run(t, false, "audit", "verify", "--audit-log", path); code != 0 {
		t.Fatalf("a log cut at an entry boundary chains: exit %d, %s", code, errOut)
	}
	code, out, errOut := run(t, false, "audit", "verify", "--audit-log", path, "--expect-head", head)
	if code != 3 || !strings.Contains(out, "-\t5\taudit log does not contain the expected head: the log ends at entry 4, before the expected head 5: 1 entry was removed") {
		t.Fatalf("truncated: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = run(t, false, "audit", "verify", "--audit-log", path, "--expect-head", head, "-o", "json")
	if code != 3 || json.Unmarshal([]byte(out), &res) != nil || res.Intact || res.Head.Seq != 4 {
		t.Fatalf("truncated json: exit %d:\n%s", code, out)
	}
	if code, _, errOut := run(t, false, "audit", "verify", "--audit-log", path, "--expect-head", "5:xyz"); code != 2 {
		t.Fatalf("bad --expect-head: exit %d, %s", code, errOut)
	}
}
