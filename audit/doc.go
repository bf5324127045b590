// Package audit is mirrorctl's tamper-evident audit log: an append-only JSON
// Lines file in which every acting command (failover apply, acl apply, ...)
// records a "begin" entry before its first write and an "end" entry after
// it, also when it fails or is interrupted.
//
// # File format
//
// One Entry per line, encoded as compact JSON with the fields in the order of
// the Entry struct, each line ending in "\n". The default file is
// DefaultPath(); it is created with mode 0600 in a directory created with
// mode 0700, opened with O_APPEND, and each line is written with one write(2)
// and fsynced before the caller goes on.
//
// # Chaining
//
// Two hashes make the file tamper-evident:
//
//   - Prev is the lowercase hex SHA-256 of the exact bytes of the previous
//     line, without its "\n" (whatever those bytes are, even a garbage line),
//     and "" on line 1.
//   - Hash is the lowercase hex SHA-256 of the entry's own line with the
//     Hash value emptied: the line ends in `"hash":"<64 hex>"}`, and Hash is
//     the digest of the same bytes ending in `"hash":""}`. It protects the
//     last line, which has no successor.
//
// Seq is the 1-based line number. Verify checks, line by line, that the line
// is a complete JSON entry, that Seq follows the previous entry's (1 on line
// 1; a garbage line in between counts as one line), that Prev matches
// the previous line and that Hash matches the line itself; so an entry that
// was modified, removed, inserted or moved, a garbage line and a truncated
// last line are all reported with their line number. The chain is
// tamper-evident, not tamper-proof: someone who can write the file can
// rewrite every hash after an edit. Removing whole entries from the END of
// the file leaves a valid chain; Check reports operations whose begin has no
// end (Report.Unfinished), which is how such a truncation, a crash or a
// kill -9 may show, and a Head (last Seq and line hash) recorded elsewhere
// detects it for certain: Report.CheckHead fails when the log no longer
// holds that entry with that hash.
//
// # Concurrency
//
// A Log is safe for concurrent use, and several processes may append to the
// same file: each append takes an exclusive flock(2) on the file, reads the
// last line to compute Seq and Prev, writes, fsyncs and unlocks. A torn last
// line left by a crash is first terminated with "\n", so it stays one
// (reported) garbage line and the new entry chains to it.
//
// # Secrets
//
// Entries never hold secrets: Begin masks the command line with MaskArgs,
// and the caller's plan and results (Entry.Data) and error texts pass
// through a redaction that replaces the value of every JSON key that looks
// sensitive (password, secret, token, jaas, credential, private key, ...) and
// every "password=..."-like fragment inside strings with "**redacted**".
package audit
