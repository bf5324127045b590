// Package settings reads and writes mirrorctl's own settings file: named
// contexts, each naming a cluster pair once (the mm2.properties path, the
// default source and target aliases, the audit log, the output format), and
// the current one, in the style of kubectl's contexts and rpk's profiles.
//
// The file is YAML at $MIRRORCTL_SETTINGS, else
// $XDG_CONFIG_HOME/mirrorctl/config.yaml, else
// ~/.config/mirrorctl/config.yaml (the XDG Base Directory specification):
//
//	current-context: prod
//	contexts:
//	  - name: prod
//	    config: /etc/mirrorctl/prod.properties
//	    source: us-east
//	    target: eu-west
//
// [Load] is strict: a syntax error, an unknown key or a value of the wrong
// shape is a [*Error] naming the file, line and key. Values are kept as
// written; their types (bool, count, output format) are checked by the
// caller together with the MIRRORCTL_* variables that can override them, so
// both go through one validation ([Validate]). [File.Save] writes the whole
// file atomically (temporary file, fsync, rename) with mode 0600.
package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvPath is the environment variable that names the settings file,
// overriding the XDG location.
const EnvPath = "MIRRORCTL_SETTINGS"

// Keys of a context, in the order they are written and shown. Each but
// Name and Description sets the global flag or flow flag of the same name.
const (
	KeyName        = "name"
	KeyDescription = "description"
	KeyConfig      = "config"
	KeySource      = "source"
	KeyTarget      = "target"
	KeyAuditLog    = "audit-log"
	KeyOutput      = "output"
	KeyNoColor     = "no-color"
	KeyVerbose     = "verbose"
)

// ContextKeys are the keys a context may hold, in file order.
var ContextKeys = []string{KeyName, KeyDescription, KeyConfig, KeySource, KeyTarget, KeyAuditLog, KeyOutput, KeyNoColor, KeyVerbose}

// top-level keys of the file.
const (
	keyCurrent  = "current-context"
	keyContexts = "contexts"
)

// Path returns the settings file's path: $MIRRORCTL_SETTINGS if set, else
// config.yaml under $XDG_CONFIG_HOME/mirrorctl (an absolute path, as the
// XDG specification requires; a relative one is ignored), else under
// ~/.config/mirrorctl. Without a home directory it is
// "mirrorctl-config.yaml" in the working directory.
func Path() string {
	if p := os.Getenv(EnvPath); p != "" {
		return p
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mirrorctl", "config.yaml")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "mirrorctl-config.yaml"
	}
	return filepath.Join(home, ".config", "mirrorctl", "config.yaml")
}

// Context is one named context. Values are as written in the file (or
// given to `context set`); "" is unset. Lines maps each key set in the
// file to its line (1-based); it is empty for a context not read from a
// file.
type Context struct {
	Name        string
	Description string
	Config      string
	Source      string
	Target      string
	AuditLog    string
	Output      string
	NoColor     string
	Verbose     string
	Lines       map[string]int
}

// Get returns the value of key (one of [ContextKeys]), "" when unset.
func (c *Context) Get(key string) string {
	if p := c.field(key); p != nil {
		return *p
	}
	return ""
}

// Set sets key (one of [ContextKeys]) to value; "" unsets it. An unknown
// key is an error naming it.
func (c *Context) Set(key, value string) error {
	p := c.field(key)
	if p == nil {
		return fmt.Errorf("unknown context key %q%s", key, didYouMean(key, ContextKeys))
	}
	*p = value
	return nil
}

func (c *Context) field(key string) *string {
	switch key {
	case KeyName:
		return &c.Name
	case KeyDescription:
		return &c.Description
	case KeyConfig:
		return &c.Config
	case KeySource:
		return &c.Source
	case KeyTarget:
		return &c.Target
	case KeyAuditLog:
		return &c.AuditLog
	case KeyOutput:
		return &c.Output
	case KeyNoColor:
		return &c.NoColor
	case KeyVerbose:
		return &c.Verbose
	}
	return nil
}

// Line returns the line key was set on in the file, 0 if unknown.
func (c *Context) Line(key string) int { return c.Lines[key] }

// File is the settings file's content.
type File struct {
	// Path is where the file was read from and where Save writes.
	Path string
	// Exists is false when there was no file at Path (Load then returns
	// an empty File).
	Exists bool
	// Current is current-context ("" when none); CurrentLine its line.
	Current     string
	CurrentLine int
	// Contexts in file order.
	Contexts []*Context
}

// Context returns the context called name.
func (f *File) Context(name string) (*Context, bool) {
	for _, c := range f.Contexts {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

// Names returns the contexts' names, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Contexts))
	for _, c := range f.Contexts {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// Delete removes the context called name and reports whether it existed.
// Deleting the current context leaves none current.
func (f *File) Delete(name string) bool {
	for i, c := range f.Contexts {
		if c.Name == name {
			f.Contexts = slices.Delete(f.Contexts, i, i+1)
			if f.Current == name {
				f.Current, f.CurrentLine = "", 0
			}
			return true
		}
	}
	return false
}

// Error is a problem in the settings file: File, the 1-based Line (0 when
// the problem has no line) and the Key at fault ("" for a syntax error).
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("settings file %s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("settings file %s: %s", loc, e.Msg)
}

// Load reads the settings file at path. A missing file is an empty File
// with Exists false and no error. A file that cannot be read, is not YAML,
// holds a key that is not a settings key (with a near-miss suggestion), a
// value that is not a plain scalar, a context without a name or two of one
// name returns an *Error naming the file, line and key. current-context is
// not checked against the contexts here: see [File.CurrentContext].
func Load(path string) (*File, error) {
	f := &File{Path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	f.Exists = true
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(path, err)
	}
	if len(doc.Content) == 0 {
		return f, nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: path, Line: root.Line, Msg: "want a mapping with current-context and contexts"}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case keyCurrent:
			if v.Kind != yaml.ScalarNode {
				return nil, &Error{File: path, Line: v.Line, Key: k.Value, Msg: "want a context name"}
			}
			f.Current, f.CurrentLine = v.Value, v.Line
		case keyContexts:
			if err := f.loadContexts(v); err != nil {
				return nil, err
			}
		default:
			return nil, &Error{File: path, Line: k.Line, Key: k.Value,
				Msg: "unknown key" + didYouMean(k.Value, []string{keyCurrent, keyContexts}) + " (keys: current-context, contexts)"}
		}
	}
	return f, nil
}

func (f *File) loadContexts(v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return &Error{File: f.Path, Line: v.Line, Key: keyContexts, Msg: "want a list of contexts (- name: ...)"}
	}
	for _, item := range v.Content {
		if item.Kind != yaml.MappingNode {
			return &Error{File: f.Path, Line: item.Line, Key: keyContexts, Msg: "want each context as a mapping (name: ..., config: ...)"}
		}
		c := &Context{Lines: map[string]int{}}
		for i := 0; i+1 < len(item.Content); i += 2 {
			k, val := item.Content[i], item.Content[i+1]
			if c.field(k.Value) == nil {
				return &Error{File: f.Path, Line: k.Line, Key: k.Value,
					Msg: "unknown context key" + didYouMean(k.Value, ContextKeys) + " (keys: " + strings.Join(ContextKeys, ", ") + ")"}
			}
			if _, dup := c.Lines[k.Value]; dup {
				return &Error{File: f.Path, Line: k.Line, Key: k.Value, Msg: fmt.Sprintf("set twice in one context (first on line %d)", c.Lines[k.Value])}
			}
			if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
				return &Error{File: f.Path, Line: val.Line, Key: k.Value, Msg: "want a single value"}
			}
			_ = c.Set(k.Value, val.Value)
			c.Lines[k.Value] = val.Line
		}
		if c.Name == "" {
			return &Error{File: f.Path, Line: item.Line, Key: KeyName, Msg: "a context needs a name"}
		}
		if prev, ok := f.Context(c.Name); ok {
			return &Error{File: f.Path, Line: c.Line(KeyName), Key: KeyName,
				Msg: fmt.Sprintf("context %q defined twice (first on line %d)", c.Name, prev.Line(KeyName))}
		}
		f.Contexts = append(f.Contexts, c)
	}
	return nil
}

// syntaxError turns a YAML parse error ("yaml: line 3: ...") into an
// *Error with the line.
func syntaxError(path string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if _, scanErr := fmt.Sscanf(n, "%d", &line); scanErr == nil {
				msg = tail
			}
		}
	}
	return &Error{File: path, Line: line, Msg: "not valid YAML: " + msg}
}

// CurrentContext returns the context chosen by name, or by current-context
// when name is "" (nil, nil when neither names one). origin says where name
// came from ("--context", "MIRRORCTL_CONTEXT") for the error; a name the
// file does not define is an error naming it and listing the contexts.
func (f *File) CurrentContext(name, origin string) (*Context, error) {
	if name == "" {
		if f.Current == "" {
			return nil, nil
		}
		c, ok := f.Context(f.Current)
		if !ok {
			return nil, &Error{File: f.Path, Line: f.CurrentLine, Key: keyCurrent,
				Msg: fmt.Sprintf("no context %q in the file (contexts: %s)", f.Current, listOrNone(f.Names()))}
		}
		return c, nil
	}
	c, ok := f.Context(name)
	if !ok {
		return nil, fmt.Errorf("%s %s: no such context in %s (contexts: %s)", origin, name, f.Path, listOrNone(f.Names()))
	}
	return c, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Save writes f to f.Path atomically: the content goes to a temporary file
// in the same directory (created 0700 if missing), is synced, and is
// renamed over the old file, so a reader sees the old file or the new one,
// never a part. The file's mode is 0600. On any error the old file is
// unchanged and the temporary file removed.
func (f *File) Save() error { return f.save(writeAll) }

func writeAll(w *os.File, data []byte) error {
	_, err := w.Write(data)
	return err
}

func (f *File) save(write func(*os.File, []byte) error) (err error) {
	data, err := f.marshal()
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing settings file %s: %w", f.Path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing settings file %s: %w", f.Path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			err = fmt.Errorf("writing settings file %s (unchanged): %w", f.Path, err)
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return err
	}
	if err = write(tmp, data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), f.Path); err != nil {
		return err
	}
	f.Exists = true
	return nil
}

// marshal renders f as YAML, keys in ContextKeys order, unset ones left
// out. Values are quoted where YAML would read them as anything but the
// string they are.
func (f *File) marshal() ([]byte, error) {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	root := &yaml.Node{Kind: yaml.MappingNode}
	if f.Current != "" {
		root.Content = append(root.Content, str(keyCurrent), str(f.Current))
	}
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, c := range f.Contexts {
		m := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range ContextKeys {
			v := c.Get(k)
			if v == "" {
				continue
			}
			val := str(v)
			if k == KeyNoColor || k == KeyVerbose {
				val.Tag = "" // a bool or a count, written bare
				val.Style = 0
			}
			m.Content = append(m.Content, str(k), val)
		}
		list.Content = append(list.Content, m)
	}
	root.Content = append(root.Content, str(keyContexts), list)
	var buf bytes.Buffer
	buf.WriteString("# mirrorctl settings: named contexts (see `mirrorctl context --help`).\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encoding settings file %s: %w", f.Path, err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
