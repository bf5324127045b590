package audit

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"time"
)

// Entry kinds.
const (
	// KindBegin is written by Begin, before the command's first write.
	KindBegin = "begin"
	// KindEnd is written by Operation.End, after the command's last write.
	KindEnd = "end"
	// KindNote is written by Operation.Note: something that happened
	// between begin and end worth keeping (a refusal, a retry).
	KindNote = "note"
)

// End statuses.
const (
	// StatusOK: everything in the plan was done.
	StatusOK = "ok"
	// StatusFailed: the command failed; Entry.Error says why.
	StatusFailed = "failed"
	// StatusInterrupted: SIGINT/SIGTERM (a cancelled context) stopped it.
	StatusInterrupted = "interrupted"
	// StatusRefused: a precondition check refused to act (nothing written).
	StatusRefused = "refused"
	// StatusPartial: some of the plan was done, some failed.
	StatusPartial = "partial"
)

// EndTimeout bounds how long End waits for the file lock and the write when
// its context is already cancelled or has no deadline.
const EndTimeout = 5 * time.Second

// Entry is one line of the audit log. See the package documentation for how
// Seq, Prev and Hash chain the lines.
type Entry struct {
	// Seq is the entry's 1-based line number in the file.
	Seq int64 `json:"seq"`
	// Time is when the entry was written, in UTC (RFC3339Nano in JSON).
	Time time.Time `json:"time"`
	// Kind is KindBegin, KindEnd or KindNote.
	Kind string `json:"kind"`
	// Op is the operation id shared by a begin, its notes and its end:
	// 16 random bytes in lowercase hex.
	Op string `json:"op"`
	// Command is the command path without the program name, e.g.
	// "failover apply".
	Command string `json:"command"`
	// Args is the command line with secrets masked by MaskArgs.
	Args []string `json:"args"`
	// User is the OS user name running the command ("" when unknown).
	User string `json:"user"`
	// Host is the machine's host name ("" when unknown).
	Host string `json:"host"`
	// ConfigDigest identifies the effective configuration (config.Digest).
	ConfigDigest string `json:"config_digest,omitempty"`
	// Status is set on end entries: StatusOK, StatusFailed,
	// StatusInterrupted, StatusRefused or StatusPartial.
	Status string `json:"status,omitempty"`
	// Error is the error text of a failed end (secrets masked).
	Error string `json:"error,omitempty"`
	// Data is caller-defined JSON: the plan on begin, the per-partition
	// results on end, anything on a note; redacted before writing.
	Data json.RawMessage `json:"data,omitempty"`
	// Prev is the hex SHA-256 of the previous line's bytes, "" on line 1.
	Prev string `json:"prev"`
	// Hash is the hex SHA-256 of this line with Hash set to "".
	Hash string `json:"hash"`
}

// DefaultPath returns $XDG_STATE_HOME/mirrorctl/audit.jsonl when
// XDG_STATE_HOME is an absolute path, else
// ~/.local/state/mirrorctl/audit.jsonl, else (no home directory)
// "mirrorctl-audit.jsonl" in the working directory.
func DefaultPath() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mirrorctl", "audit.jsonl")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "mirrorctl-audit.jsonl"
	}
	return filepath.Join(home, ".local", "state", "mirrorctl", "audit.jsonl")
}

// Log appends entries to one audit file. It is safe for concurrent use by
// goroutines, and other processes may append to the same file at the same
// time (flock). Close it when done.
type Log struct {
	path string
	now  func() time.Time
	user string
	host string

	mu sync.Mutex // serialises appends and Close within the process
	f  *os.File   // nil once closed
}

// Open opens (creating when absent) the audit file at path for appending:
// parent directories are created with mode 0700 and the file with mode
// 0600. Errors name the path.
func Open(path string) (*Log, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit log %s: creating directory: %w", path, err)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// Make the new directory entry durable too.
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			_ = d.Close()
		}
	}
	l := &Log{path: path, now: time.Now, f: f}
	if u, err := user.Current(); err == nil {
		l.user = u.Username
	} else {
		l.user = os.Getenv("USER")
	}
	l.host, _ = os.Hostname()
	return l, nil
}

// Path returns the file the Log appends to.
func (l *Log) Path() string { return l.path }

// Close closes the file. Appending afterwards returns an error; Close is
// idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("audit log %s: closing: %w", l.path, err)
	}
	return nil
}

// Operation is one acting command's pair of begin and end entries. Get one
// from Log.Begin and always call End, typically deferred.
type Operation struct {
	log          *Log
	id           string
	command      string
	args         []string
	configDigest string

	mu    sync.Mutex
	ended bool
}

// ID returns the operation id shared by its entries (Entry.Op).
func (o *Operation) ID() string { return o.id }

// Begin appends a begin entry for command (e.g. "failover apply") with the
// command line args (masked with MaskArgs), the effective configuration's
// digest and plan (any JSON-encodable value, redacted; nil for none), fsyncs
// it and returns the operation handle. Call it before the command's first
// write; if it fails, the command must not act. It returns ctx.Err() if ctx
// ends while waiting for another process's lock.
func (l *Log) Begin(ctx context.Context, command string, args []string, configDigest string, plan any) (*Operation, error) {
	id, err := newOpID()
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", l.path, err)
	}
	o := &Operation{log: l, id: id, command: command, args: MaskArgs(args), configDigest: configDigest}
	if _, err := l.append(ctx, o.entry(KindBegin), plan); err != nil {
		return nil, err
	}
	return o, nil
}

// Note appends a note entry (KindNote) to the operation with data (any
// JSON-encodable value, redacted), e.g. a retry or a partition skipped
// between begin and end, and fsyncs it.
func (o *Operation) Note(ctx context.Context, data any) error {
	_, err := o.log.append(ctx, o.entry(KindNote), data)
	return err
}

// End appends the operation's end entry with status, the result (any
// JSON-encodable value, redacted; nil for none) and err's text (masked),
// and fsyncs it. An empty status is derived: StatusOK when err is nil,
// StatusInterrupted when err is or wraps context.Canceled or
// context.DeadlineExceeded or ctx is done, else StatusFailed. End writes
// even when ctx is already cancelled: it uses context.WithoutCancel(ctx)
// with an EndTimeout deadline. Calling End a second time returns an error
// and writes nothing.
func (o *Operation) End(ctx context.Context, status string, result any, err error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended {
		return fmt.Errorf("audit log %s: operation %s already ended", o.log.path, o.id)
	}
	if status == "" {
		switch {
		case err == nil:
			status = StatusOK
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
			status = StatusInterrupted
		default:
			status = StatusFailed
		}
	}
	e := o.entry(KindEnd)
	e.Status = status
	if err != nil {
		e.Error = MaskText(err.Error())
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), EndTimeout)
	defer cancel()
	if _, werr := o.log.append(wctx, e, result); werr != nil {
		return werr
	}
	o.ended = true
	return nil
}

func (o *Operation) entry(kind string) Entry {
	return Entry{
		Kind:         kind,
		Op:           o.id,
		Command:      o.command,
		Args:         o.args,
		User:         o.log.user,
		Host:         o.log.host,
		ConfigDigest: o.configDigest,
	}
}

func newOpID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("operation id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// append fills in e's Time, Seq, Prev, Data and Hash, writes it as one line
// under the file lock and fsyncs. data is marshalled and redacted first.
func (l *Log) append(ctx context.Context, e Entry, data any) (Entry, error) {
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return Entry{}, fmt.Errorf("audit log %s: encoding %s data: %w", l.path, e.Kind, err)
		}
		if string(raw) != "null" {
			if raw, err = redactJSON(raw); err != nil {
				return Entry{}, fmt.Errorf("audit log %s: redacting %s data: %w", l.path, e.Kind, err)
			}
			e.Data = raw
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return Entry{}, fmt.Errorf("audit log %s: closed", l.path)
	}
	if err := lockFile(ctx, l.f); err != nil {
		return Entry{}, fmt.Errorf("audit log %s: locking: %w", l.path, err)
	}
	defer func() { _ = unlockFile(l.f) }()

	t, err := readTail(l.f)
	if err != nil {
		return Entry{}, fmt.Errorf("audit log %s: reading the last entry: %w", l.path, err)
	}
	e.Seq = t.nextSeq
	e.Prev = t.prev
	e.Time = l.now().UTC()
	e.Hash = ""
	line, err := sealLine(e)
	if err != nil {
		return Entry{}, fmt.Errorf("audit log %s: encoding entry %d: %w", l.path, e.Seq, err)
	}
	e.Hash = string(line[len(line)-2-sha256.Size*2 : len(line)-2])
	buf := make([]byte, 0, len(line)+2)
	if t.torn {
		buf = append(buf, '\n') // close the torn line; it stays one garbage line
	}
	buf = append(append(buf, line...), '\n')
	if _, err := l.f.Write(buf); err != nil {
		return Entry{}, fmt.Errorf("audit log %s: writing entry %d: %w", l.path, e.Seq, err)
	}
	if err := l.f.Sync(); err != nil {
		return Entry{}, fmt.Errorf("audit log %s: syncing entry %d: %w", l.path, e.Seq, err)
	}
	return e, nil
}

// sealLine encodes e (whose Hash must be "") and fills in the hash: the
// result ends in `"hash":"<64 hex>"}` where the hex is the SHA-256 of the
// same bytes with `"hash":""}`.
func sealLine(e Entry) ([]byte, error) {
	b, err := marshal(e)
	if err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b, []byte(hashEmptySuffix)) {
		return nil, fmt.Errorf("entry encoding does not end in %s", hashEmptySuffix)
	}
	sum := sha256.Sum256(b)
	out := make([]byte, 0, len(b)+sha256.Size*2)
	out = append(out, b[:len(b)-2]...)
	out = hex.AppendEncode(out, sum[:])
	return append(out, `"}`...), nil
}

const hashEmptySuffix = `"hash":""}`

// lockFile takes an exclusive lock on f (flock on unix, LockFileEx on
// windows: lock_unix.go, lock_windows.go), polling without blocking so that
// ctx can end the wait (a blocking lock cannot be interrupted).
func lockFile(ctx context.Context, f *os.File) error {
	wait := time.Millisecond
	for {
		ok, err := tryLockFile(f)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

// tail is what an append needs to know about the end of the file.
type tail struct {
	nextSeq int64  // Seq of the entry to write
	prev    string // hex SHA-256 of the last line, "" for an empty file
	torn    bool   // the file does not end in "\n"
}

// readTail reads the end of f backwards in growing windows until it has the
// whole last line and a parseable entry (or the start of the file). The
// next Seq is the last parseable entry's Seq plus the number of lines after
// it, plus one; with no parseable entry it is the line count plus one.
func readTail(f *os.File) (tail, error) {
	fi, err := f.Stat()
	if err != nil {
		return tail{}, err
	}
	size := fi.Size()
	if size == 0 {
		return tail{nextSeq: 1}, nil
	}
	for window := int64(64 << 10); ; window *= 2 {
		start := max(size-window, 0)
		buf := make([]byte, size-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return tail{}, err
		}
		t := tail{torn: buf[len(buf)-1] != '\n'}
		body := bytes.TrimSuffix(buf, []byte("\n"))
		lines := bytes.Split(body, []byte("\n"))
		if start > 0 {
			lines = lines[1:] // the first may be cut; an earlier window has it
		}
		if len(lines) == 0 {
			continue // the last line is longer than the window
		}
		sum := sha256.Sum256(lines[len(lines)-1])
		t.prev = hex.EncodeToString(sum[:])
		for i := len(lines) - 1; i >= 0; i-- {
			var e struct {
				Seq *int64 `json:"seq"`
			}
			if json.Unmarshal(lines[i], &e) == nil && e.Seq != nil {
				t.nextSeq = *e.Seq + int64(len(lines)-i)
				return t, nil
			}
		}
		if start == 0 {
			t.nextSeq = int64(len(lines)) + 1
			return t, nil
		}
	}
}
