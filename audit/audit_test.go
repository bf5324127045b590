package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets TestConcurrentProcesses re-execute this test binary as a
// second appender: with AUDIT_TEST_APPEND=<path>,<n> it appends n
// begin/end pairs to path and exits.
func TestMain(m *testing.M) {
	if v := os.Getenv("AUDIT_TEST_APPEND"); v != "" {
		path, n, _ := strings.Cut(v, ",")
		count, _ := strconv.Atoi(n)
		if err := appendPairs(path, "child", count); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func appendPairs(path, who string, n int) error {
	l, err := Open(path)
	if err != nil {
		return err
	}
	defer l.Close()
	ctx := context.Background()
	for i := range n {
		op, err := l.Begin(ctx, "test "+who, []string{strconv.Itoa(i)}, "", nil)
		if err != nil {
			return err
		}
		if err := op.End(ctx, "", map[string]int{"i": i}, nil); err != nil {
			return err
		}
	}
	return nil
}

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// openAt opens a log in a temp dir whose clock returns t0, t0+1s, ...
func openAt(t *testing.T) (*Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "mirrorctl", "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var mu sync.Mutex
	n := 0
	l.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return t0.Add(time.Duration(n-1) * time.Second).In(time.FixedZone("CEST", 7200))
	}
	return l, path
}

// writeOp writes begin, note, end for one operation.
func writeOp(t *testing.T, l *Log, command string) *Operation {
	t.Helper()
	ctx := context.Background()
	op, err := l.Begin(ctx, command, []string{"--group", "g1"}, "sha256:abc", map[string]any{"groups": []string{"g1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Note(ctx, map[string]string{"msg": "retrying"}); err != nil {
		t.Fatal(err)
	}
	if err := op.End(ctx, StatusPartial, map[string]int{"committed": 3}, errors.New("partition 2: NOT_COORDINATOR")); err != nil {
		t.Fatal(err)
	}
	return op
}

func TestOpenPermissionsAndEntries(t *testing.T) {
	l, path := openAt(t)
	op := writeOp(t, l, "failover apply")
	for p, want := range map[string]fs.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	es, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 {
		t.Fatalf("%d entries, want 3", len(es))
	}
	want := []struct {
		kind, status, data, errText string
		time                        time.Time
	}{
		{KindBegin, "", `{"groups":["g1"]}`, "", t0},
		{KindNote, "", `{"msg":"retrying"}`, "", t0.Add(time.Second)},
		{KindEnd, StatusPartial, `{"committed":3}`, "partition 2: NOT_COORDINATOR", t0.Add(2 * time.Second)},
	}
	for i, e := range es {
		w := want[i]
		if e.Seq != int64(i+1) || e.Kind != w.kind || e.Status != w.status || string(e.Data) != w.data || e.Error != w.errText ||
			!e.Time.Equal(w.time) || e.Time.Location() != time.UTC || e.Op != op.ID() || e.Command != "failover apply" ||
			!slices.Equal(e.Args, []string{"--group", "g1"}) || e.ConfigDigest != "sha256:abc" || len(e.Hash) != 64 {
			t.Errorf("entry %d = %+v, want %+v", i+1, e, w)
		}
		if e.Host == "" || e.User == "" {
			t.Errorf("entry %d: user %q host %q, want both set", i+1, e.User, e.Host)
		}
	}
	if es[0].Prev != "" || es[1].Prev == "" || es[2].Prev == es[1].Prev {
		t.Errorf("prev chain: %q %q %q", es[0].Prev, es[1].Prev, es[2].Prev)
	}
	raw, _ := os.ReadFile(path)
	if !bytes.Contains(raw, []byte(`"time":"2024-05-01T12:00:00Z"`)) {
		t.Errorf("time not written as RFC3339 UTC:\n%s", raw)
	}
	probs, err := Verify(path)
	if err != nil || len(probs) != 0 {
		t.Fatalf("Verify = %v, %v; want intact", probs, err)
	}
}

func TestEndStatusDerived(t *testing.T) {
	l, path := openAt(t)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		ctx    context.Context
		status string
		err    error
		want   string
	}{
		{context.Background(), "", nil, StatusOK},
		{context.Background(), "", errors.New("boom"), StatusFailed},
		{context.Background(), "", fmt.Errorf("committing: %w", context.Canceled), StatusInterrupted},
		{canceled, "", errors.New("broker said no"), StatusInterrupted},
		{context.Background(), StatusRefused, errors.New("group active"), StatusRefused},
	}
	for i, tt := range tests {
		op, err := l.Begin(context.Background(), "x", nil, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.End(tt.ctx, tt.status, nil, tt.err); err != nil {
			t.Fatalf("case %d: End: %v", i, err)
		}
		if err := op.End(context.Background(), "", nil, nil); err == nil || !strings.Contains(err.Error(), "already ended") {
			t.Fatalf("case %d: second End = %v, want already ended", i, err)
		}
		es, _ := Read(path)
		if got := es[len(es)-1]; got.Status != tt.want || got.Kind != KindEnd {
			t.Errorf("case %d: status %q kind %q, want %q end", i, got.Status, got.Kind, tt.want)
		}
	}
}

// TestEndWritesAfterInterrupt: a cancelled command still leaves its end
// entry, even while another process holds the lock for a moment.
func TestEndWritesAfterInterrupt(t *testing.T) {
	l, path := openAt(t)
	ctx, cancel := context.WithCancel(context.Background())
	op, err := l.Begin(ctx, "failover apply", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if ok, err := tryLockFile(other); err != nil || !ok {
		t.Fatalf("taking the lock from a second handle: %v, %v", ok, err)
	}
	cancel() // Ctrl-C
	// Begin with the cancelled ctx gives up waiting for the lock.
	if _, err := l.Begin(ctx, "other", nil, "", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin on a cancelled ctx with the lock held = %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() { done <- op.End(ctx, "", nil, ctx.Err()) }()
	time.Sleep(20 * time.Millisecond) // End is now waiting for the lock
	_ = unlockFile(other)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("End after cancel: %v", err)
		}
	case <-time.After(EndTimeout + time.Second):
		t.Fatal("End did not return")
	}
	r, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 2 || r.Entries[1].Kind != KindEnd || r.Entries[1].Status != StatusInterrupted ||
		r.Entries[1].Error != "context canceled" || !r.Intact() || len(r.Unfinished) != 0 {
		t.Fatalf("report %+v", r)
	}
}

func TestUnfinished(t *testing.T) {
	l, path := openAt(t)
	writeOp(t, l, "a")
	op, err := l.Begin(context.Background(), "b", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Intact() || len(r.Unfinished) != 1 || r.Unfinished[0].Op != op.ID() || r.Unfinished[0].Seq != 4 || r.Lines != 4 {
		t.Fatalf("report %+v", r)
	}
}

// tamper builds a 6-line log (two operations), applies edit to its lines
// (without newlines) and returns the rewritten file's path.
func tamper(t *testing.T, edit func(lines [][]byte) [][]byte, suffix string) string {
	t.Helper()
	l, path := openAt(t)
	writeOp(t, l, "failover apply")
	writeOp(t, l, "acl apply")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	lines = edit(lines)
	out := append(bytes.Join(lines, []byte("\n")), '\n')
	out = append(out, suffix...)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVerifyTamper(t *testing.T) {
	tests := []struct {
		name   string
		edit   func([][]byte) [][]byte
		suffix string
		want   []string // "line: message prefix"
	}{
		{name: "intact", edit: func(l [][]byte) [][]byte { return l }},
		{name: "modified", edit: func(l [][]byte) [][]byte {
			l[1] = bytes.Replace(l[1], []byte("retrying"), []byte("RETRYING"), 1)
			return l
		}, want: []string{"2: hash does not match", "3: prev does not match line 2"}},
		{name: "modified last", edit: func(l [][]byte) [][]byte {
			l[5] = bytes.Replace(l[5], []byte(`"committed":3`), []byte(`"committed":4`), 1)
			return l
		}, want: []string{"6: hash does not match"}},
		{name: "hash rewritten", edit: func(l [][]byte) [][]byte {
			l[2] = bytes.Replace(l[2], []byte(`"hash":"`), []byte(`"hash":"0`), 1)
			l[2] = append(l[2][:len(l[2])-3], `"}`...)
			return l
		}, want: []string{"3: hash does not match", "4: prev does not match line 3"}},
		{name: "removed", edit: func(l [][]byte) [][]byte { return slices.Delete(l, 2, 3) },
			want: []string{"3: seq 4, want 3", "3: prev does not match line 2"}},
		{name: "removed first", edit: func(l [][]byte) [][]byte { return l[1:] },
			want: []string{"1: seq 2, want 1", "1: prev is set on the first line", "1: note of operation", "2: end of operation"}},
		{name: "reordered", edit: func(l [][]byte) [][]byte { l[3], l[4] = l[4], l[3]; return l },
			want: []string{"4: seq 5, want 4", "4: prev does not match line 3", "4: note of operation", "5: seq 4, want 6", "5: prev does not match line 4", "6: seq 6, want 5", "6: prev does not match line 5"}},
		{name: "truncated last line", edit: func(l [][]byte) [][]byte { return l[:5] }, suffix: `{"seq":6,"time":"2024-05-01T12:00:05Z","kind":"en`,
			want: []string{"6: last line is incomplete"}},
		{name: "garbage line", edit: func(l [][]byte) [][]byte { return slices.Insert(l, 2, []byte("rm -rf /")) },
			want: []string{"3: not an audit entry: invalid character", "4: seq 3, want 4", "4: prev does not match line 3"}},
		{name: "blank line", edit: func(l [][]byte) [][]byte { return append(l, nil) },
			want: []string{"7: not an audit entry: empty line"}},
		{name: "unknown field", edit: func(l [][]byte) [][]byte {
			l[0] = bytes.Replace(l[0], []byte(`{"seq"`), []byte(`{"x":1,"seq"`), 1)
			return l
		}, want: []string{`1: not an audit entry: json: unknown field "x"`, "2: prev does not match line 1", "2: note of operation", "3: end of operation"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tamper(t, tt.edit, tt.suffix)
			probs, err := Verify(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range probs {
				got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Msg))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want prefix %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestAppendAfterTornLine: a write cut off by a crash is closed with a
// newline, reported once, and the chain goes on from it.
func TestAppendAfterTornLine(t *testing.T) {
	path := tamper(t, func(l [][]byte) [][]byte { return l[:5] }, `{"seq":6,"ti`)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	writeOp(t, l, "failover apply")
	r, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 1 || r.Problems[0].Line != 6 || !strings.HasPrefix(r.Problems[0].Msg, "not an audit entry") {
		t.Fatalf("problems %v, want only line 6", r.Problems)
	}
	if r.Lines != 9 || len(r.Entries) != 8 || r.Entries[5].Seq != 7 || r.Entries[7].Seq != 9 {
		t.Fatalf("lines %d entries %d", r.Lines, len(r.Entries))
	}
	_, err = Read(path)
	if err == nil || !strings.Contains(err.Error(), path+":6: not an audit entry") {
		t.Fatalf("Read error = %v, want one naming %s:6", err, path)
	}
}

// TestLongEntries: an entry longer than the 64 KiB tail window.
func TestLongEntries(t *testing.T) {
	l, path := openAt(t)
	big := map[string]string{"plan": strings.Repeat("p", 200<<10)}
	for range 2 {
		op, err := l.Begin(context.Background(), "x", nil, "", big)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.End(context.Background(), "", big, nil); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Check(path)
	if err != nil || !r.Intact() || len(r.Entries) != 4 {
		t.Fatalf("report %+v, %v", r.Problems, err)
	}
}

func TestSecretsNeverWritten(t *testing.T) {
	const pw = "hunter2"
	l, path := openAt(t)
	args := []string{
		"failover", "apply", "--password", pw, "--sasl-password=" + pw,
		"-X", `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="` + pw + `";`,
		"--bootstrap", "sasl://admin:" + pw + "@broker:9092", "--token", pw, "--group", "g1",
	}
	plan := map[string]any{
		"groups":            []string{"g1"},
		"ssl.key.password":  pw,
		"nested":            map[string]any{"Token": pw, "list": []any{map[string]string{"client_secret": pw}}},
		"note":              "sasl.password=" + pw + " was used",
		"key":               "k-digest",
		"sasl.jaas.config":  map[string]string{"password": pw},
		"empty_password":    "",
		"credentials":       []string{pw},
		"records_to_reread": 12,
	}
	op, err := l.Begin(context.Background(), "failover apply", args, "", plan)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.End(context.Background(), "", plan, fmt.Errorf("SASL authentication failed for password=%s: %w", pw, errors.New("bad"))); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(pw)) {
		t.Fatalf("secret in the audit log:\n%s", raw)
	}
	es, _ := Read(path)
	wantArgs := []string{"failover", "apply", "--password", Redacted, "--sasl-password=" + Redacted, "-X", "sasl.jaas.config=" + Redacted,
		"--bootstrap", "sasl://admin:" + Redacted + "@broker:9092", "--token", Redacted, "--group", "g1"}
	if !slices.Equal(es[0].Args, wantArgs) {
		t.Errorf("args %q\nwant %q", es[0].Args, wantArgs)
	}
	var got map[string]any
	if err := json.Unmarshal(es[0].Data, &got); err != nil {
		t.Fatal(err)
	}
	if got["key"] != "k-digest" || got["records_to_reread"] != 12.0 || got["empty_password"] != "" || got["ssl.key.password"] != Redacted ||
		got["note"] != "sasl.password="+Redacted+" was used" || got["sasl.jaas.config"] != Redacted {
		t.Errorf("redacted data %v", got)
	}
	if es[1].Error != "SASL authentication failed for password="+Redacted+" bad" {
		t.Errorf("error %q", es[1].Error)
	}
	if probs, _ := Verify(path); len(probs) != 0 {
		t.Errorf("problems %v", probs)
	}
}

func TestMaskArgs(t *testing.T) {
	tests := []struct{ in, want []string }{
		{nil, nil},
		{[]string{"--group", "g1", "--topic", "t"}, []string{"--group", "g1", "--topic", "t"}},
		{[]string{"--password", "p", "x"}, []string{"--password", Redacted, "x"}},
		{[]string{"--password=p"}, []string{"--password=" + Redacted}},
		{[]string{"-password", "p"}, []string{"-password", Redacted}},
		{[]string{"--no-password", "--yes"}, []string{"--no-password", "--yes"}},
		{[]string{"--api-key", "k", "--key", "k"}, []string{"--api-key", Redacted, "--key", Redacted}},
		{[]string{"--set", "ssl.key.password=p", "--set=sasl.jaas.config=x y"}, []string{"--set", "ssl.key.password=" + Redacted, "--set=sasl.jaas.config=" + Redacted}},
		{[]string{"bootstrap.servers=a:9092", "SECRET=s"}, []string{"bootstrap.servers=a:9092", "SECRET=" + Redacted}},
		{[]string{"https://u:p@h/x", "--url=https://u:p@h"}, []string{"https://u:" + Redacted + "@h/x", "--url=https://u:" + Redacted + "@h"}},
		{[]string{"--client-secret", "s", "--oauth-token=t", "--credentials-file", "/f"}, []string{"--client-secret", Redacted, "--oauth-token=" + Redacted, "--credentials-file", Redacted}},
	}
	for _, tt := range tests {
		got := MaskArgs(tt.in)
		if !slices.Equal(got, tt.want) || (tt.in == nil) != (got == nil) {
			t.Errorf("MaskArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	in := []string{"--password", "p"}
	MaskArgs(in)
	if in[1] != "p" {
		t.Error("MaskArgs modified its input")
	}
}

func TestMaskText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{`username="u" password="p";`, `username="u" password=` + Redacted + `;`},
		{"ssl.truststore.password: abc, next", "ssl.truststore.password: " + Redacted + ", next"},
		{"token=abc def", "token=" + Redacted + " def"},
		{"dial sasl://u:pw@host:9092 failed", "dial sasl://u:" + Redacted + "@host:9092 failed"},
	}
	for _, tt := range tests {
		if got := MaskText(tt.in); got != tt.want {
			t.Errorf("MaskText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestConcurrentGoroutines: two Logs on the same file (two file
// descriptions, as two processes would have) plus goroutines sharing each.
func TestConcurrentGoroutines(t *testing.T) {
	_, path := openAt(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- appendPairs(path, strconv.Itoa(i), 25)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := Check(path)
	if err != nil || !r.Intact() || len(r.Entries) != 200 || len(r.Unfinished) != 0 {
		t.Fatalf("entries %d problems %v unfinished %d err %v", len(r.Entries), r.Problems, len(r.Unfinished), err)
	}
}

// TestConcurrentProcesses: this process and a child append at once.
func TestConcurrentProcesses(t *testing.T) {
	_, path := openAt(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AUDIT_TEST_APPEND="+path+",100")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	parentErr := appendPairs(path, "parent", 100)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	if parentErr != nil {
		t.Fatal(parentErr)
	}
	r, err := Check(path)
	if err != nil || !r.Intact() || len(r.Entries) != 400 {
		t.Fatalf("entries %d problems %v err %v", len(r.Entries), r.Problems, err)
	}
	who := map[string]int{}
	for _, e := range r.Entries {
		who[e.Command]++
	}
	if who["test child"] != 200 || who["test parent"] != 200 {
		t.Fatalf("entries per process %v", who)
	}
}

func TestClosed(t *testing.T) {
	l, _ := openAt(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Begin(context.Background(), "x", nil, "", nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Begin after Close = %v", err)
	}
}

func TestVerifyMissingAndEmpty(t *testing.T) {
	dir := t.TempDir()
	if _, err := Verify(filepath.Join(dir, "none.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Verify(missing) = %v, want fs.ErrNotExist", err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Check(empty)
	if err != nil || !r.Intact() || r.Lines != 0 || len(r.Entries) != 0 {
		t.Fatalf("Check(empty) = %+v, %v", r, err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state")
	if got := DefaultPath(); got != "/var/state/mirrorctl/audit.jsonl" {
		t.Errorf("DefaultPath = %q", got)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/op")
	if got := DefaultPath(); got != "/home/op/.local/state/mirrorctl/audit.jsonl" {
		t.Errorf("DefaultPath with a relative XDG_STATE_HOME = %q", got)
	}
}
