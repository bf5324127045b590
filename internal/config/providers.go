package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// refPattern matches a config-provider reference ${provider:[path:]key}, the
// same shape as Kafka's ConfigTransformer pattern: group 1 is the provider,
// group 3 the optional path, group 4 the key.
var refPattern = regexp.MustCompile(`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`)

// provider is one declared config provider (config.providers.<name>.class).
type provider struct {
	name, class string
	line        int
	params      map[string]string // config.providers.<name>.param.<k>
}

// resolver resolves ${provider:path:key} references in memory. It caches
// the files it reads for the duration of one Load.
type resolver struct {
	file      string
	env       func(string) (string, bool)
	providers map[string]*provider
	files     map[string]map[string]string // FileConfigProvider: path -> props
}

// resolve replaces every reference in value. It reports whether any
// reference was replaced. Errors name file, line and key but never the value
// or what a reference resolved to.
func (r *resolver) resolve(e rawEntry) (string, bool, *Error) {
	if !strings.Contains(e.value, "${") {
		return e.value, false, nil
	}
	var firstErr *Error
	used := false
	out := refPattern.ReplaceAllStringFunc(e.value, func(ref string) string {
		if firstErr != nil {
			return ref
		}
		m := refPattern.FindStringSubmatch(ref)
		v, err := r.lookup(m[1], m[3], m[4])
		if err != nil {
			firstErr = &Error{File: r.file, Line: e.line, Key: e.key, Msg: err.Error(), Err: err}
			return ref
		}
		used = true
		return v
	})
	if firstErr != nil {
		return "", false, firstErr
	}
	return out, used, nil
}

// lookup resolves one reference. Its error text holds the provider name, the
// path and the key of the reference (which are written in the file and are
// not secret), never a resolved value.
func (r *resolver) lookup(name, path, key string) (string, error) {
	p, ok := r.providers[name]
	if !ok {
		return "", fmt.Errorf("reference to config provider %q, which is not declared (add it to config.providers and set config.providers.%s.class)", name, name)
	}
	switch p.class {
	case classEnvProvider:
		if path != "" {
			return "", fmt.Errorf("${%s:...} reference has a path; EnvVarConfigProvider takes only a variable name", name)
		}
		if pat, ok := p.params["allowlist.pattern"]; ok {
			re, err := regexp.Compile(`^(?:` + pat + `)$`)
			if err == nil && !re.MatchString(key) {
				return "", fmt.Errorf("environment variable %s is not allowed by config.providers.%s.param.allowlist.pattern", key, name)
			}
		}
		v, ok := r.env(key)
		if !ok {
			return "", fmt.Errorf("environment variable %s (from ${%s:%s}) is not set", key, name, key)
		}
		return v, nil
	case classFileProvider:
		if path == "" {
			return "", fmt.Errorf("${%s:...} reference needs a path: ${%s:/path/to/file.properties:%s}", name, name, key)
		}
		if err := p.allowed(path); err != nil {
			return "", err
		}
		props, err := r.readProps(path)
		if err != nil {
			return "", err
		}
		v, ok := props[key]
		if !ok {
			return "", fmt.Errorf("key %q not found in %s (from ${%s:...})", key, path, name)
		}
		return v, nil
	case classDirectoryProvider:
		if path == "" {
			return "", fmt.Errorf("${%s:...} reference needs a directory: ${%s:/path/to/dir:%s}", name, name, key)
		}
		if key == "" || key == "." || key == ".." || strings.ContainsAny(key, `/\`) {
			return "", fmt.Errorf("${%s:...} file name %q must be a plain name inside the directory", name, key)
		}
		if err := p.allowed(path); err != nil {
			return "", err
		}
		b, err := os.ReadFile(filepath.Join(path, key))
		if err != nil {
			return "", fmt.Errorf("config provider %s: %w", name, err)
		}
		// DirectoryConfigProvider returns the file's content as is,
		// trailing newline included.
		return string(b), nil
	}
	return "", fmt.Errorf("config provider %q has unsupported class", name)
}

// allowed applies the allowed.paths parameter (KIP-993, Kafka 3.8) of the
// file and directory providers: a comma-separated list of absolute paths
// under which referenced files must lie. Absent means no restriction.
func (p *provider) allowed(path string) error {
	list, ok := p.params["allowed.paths"]
	if !ok || strings.TrimSpace(list) == "" {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("config provider %s: %w", p.name, err)
	}
	for _, a := range strings.Split(list, ",") {
		a = filepath.Clean(strings.TrimSpace(a))
		if rel, err := filepath.Rel(a, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("path %s is outside config.providers.%s.param.allowed.paths", path, p.name)
}

// readProps loads a .properties file for FileConfigProvider, once per path.
func (r *resolver) readProps(path string) (map[string]string, error) {
	if m, ok := r.files[path]; ok {
		return m, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config provider file: %w", err)
	}
	entries, errs, _ := parseEntries(path, string(b))
	if len(errs) > 0 {
		return nil, fmt.Errorf("config provider file: %w", errs[0])
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.key] = e.value
	}
	if r.files == nil {
		r.files = map[string]map[string]string{}
	}
	r.files[path] = m
	return m, nil
}
