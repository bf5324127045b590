package config

import (
	"cmp"
	"fmt"
	"slices"
)

// Error is one problem in an mm2.properties file, at a place: the file, the
// 1-based line where the offending logical line starts (0 when the problem
// has no line, e.g. a missing required key) and the key. Load and Parse
// return every problem they find, joined with errors.Join, each an *Error;
// use errors.As to get at one.
//
// Msg never contains a property value, so an Error can be printed or logged
// even when the value at fault is a password or a JAAS config.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
	// Err is the underlying cause, if any (e.g. an *fs.PathError from a
	// config provider). Its text is part of Msg already; it is kept for
	// errors.Is / errors.As.
	Err error
}

// Error formats the problem as "file:line: key: msg". The line is left out
// when it is 0 and the key when it is empty.
func (e *Error) Error() string { return place(e.File, e.Line, e.Key) + e.Msg }

// Unwrap returns the underlying cause, or nil.
func (e *Error) Unwrap() error { return e.Err }

// Warning is a non-fatal remark about an mm2.properties file: an unknown or
// misspelt key (with a "did you mean" suggestion), a setting MM2 or mirrorctl
// ignores where it was written, a deprecated alias, a duplicate key. Like
// Error, it never contains a property value.
type Warning struct {
	File string
	Line int
	Key  string
	Msg  string
}

// String formats the warning as "file:line: key: msg".
func (w Warning) String() string { return place(w.File, w.Line, w.Key) + w.Msg }

func place(file string, line int, key string) string {
	s := file
	if line > 0 {
		s = fmt.Sprintf("%s:%d", s, line)
	}
	s += ": "
	if key != "" {
		s += key + ": "
	}
	return s
}

// sortProblems orders errors by line then key, and drops exact duplicates
// (the same top-level problem can be found once per flow).
func sortErrors(errs []*Error) []*Error {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Msg, b.Msg))
	})
	return slices.CompactFunc(errs, func(a, b *Error) bool {
		return a.File == b.File && a.Line == b.Line && a.Key == b.Key && a.Msg == b.Msg
	})
}

func sortWarnings(ws []Warning) []Warning {
	slices.SortStableFunc(ws, func(a, b Warning) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Msg, b.Msg))
	})
	return slices.Compact(ws)
}
