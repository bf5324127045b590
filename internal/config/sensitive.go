package config

import "strings"

// sensitiveParts are the substrings that mark a key's value as a secret.
// Matching is on the lower-cased key, so prefixed forms (A.ssl.key.password,
// A.consumer.sasl.jaas.config) are caught too.
var sensitiveParts = []string{
	"password",    // ssl.keystore.password, ssl.key.password, ssl.truststore.password, ...
	"passphrase",  // e.g. PEM key passphrases of OAuth assertion keys
	"secret",      // client secrets, secret.key, ...
	"jaas",        // sasl.jaas.config: holds username AND password inline
	"credential",  // over-matches basic.auth.credentials.source; hiding it is harmless
	"user.info",   // basic.auth.user.info = user:password
	"private.key", // PEM private keys
	"api.key",
	"apikey",
}

// IsSensitive reports whether the value of key is a secret that must never
// be printed, logged, hashed into a digest or put in an error: any key whose
// lower-cased name contains password, passphrase, secret, jaas, credential,
// user.info, private.key, api.key or apikey; ssl.keystore.key (a PEM private
// key, KIP-651); and keys with a misspelt "password" or "secret" segment
// (ssl.keystore.pasword, within 2 edits), so that a typo, which is reported
// as an unknown key, does not also print the secret.
//
// Certificates are public and are not sensitive: ssl.keystore.certificate.chain
// and ssl.truststore.certificates are shown, as are store locations and types.
// Config-provider references (${env:VAR}) are not secrets themselves; the
// values they resolve to are never shown for any key (see Setting).
func IsSensitive(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "ssl.keystore.key") {
		return true
	}
	for _, p := range sensitiveParts {
		if strings.Contains(k, p) {
			return true
		}
	}
	for _, seg := range strings.FieldsFunc(k, func(r rune) bool { return r == '.' || r == '_' || r == '-' }) {
		if editDistance(seg, "password") <= 2 || editDistance(seg, "secret") <= 1 || seg == "pwd" {
			return true
		}
	}
	return false
}

// Display returns value as it may be shown for key: "**redacted**" when key
// is sensitive and value is not empty, a server list with its userinfo
// masked (MaskServers) when key is a bootstrap.servers key, else value
// unchanged. Use it for values from Cluster.ClientProps before printing them.
func Display(key, value string) string {
	switch {
	case value != "" && IsSensitive(key):
		return redacted
	case isServersKey(key):
		return MaskServers(value)
	}
	return value
}

// SeedAddress returns the host:port of one bootstrap.servers entry as Kafka's
// clients read it (ClientUtils.parseAndValidateAddresses: the host and port at
// the end of the entry), dropping a "PROTOCOL://" prefix and any userinfo
// before an "@". userinfo reports whether the entry carried such credentials:
// Kafka ignores them there (a client authenticates through sasl.jaas.config),
// and so does mirrorctl, but they are a secret all the same.
func SeedAddress(entry string) (addr string, userinfo bool) {
	s := strings.TrimSpace(entry)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return s[i+1:], true
	}
	return s, false
}

// MaskServers returns a bootstrap.servers value (comma-separated) safe to
// print: the userinfo of each entry (user:password@) is replaced by "***@";
// entries without one are unchanged.
func MaskServers(v string) string {
	if !strings.Contains(v, "@") {
		return v
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		if addr, ui := SeedAddress(p); ui {
			prefix := ""
			if j := strings.Index(p, "://"); j >= 0 {
				prefix = strings.TrimSpace(p[:j+3])
			}
			parts[i] = prefix + "***@" + addr
		}
	}
	return strings.Join(parts, ",")
}

// isServersKey reports whether key holds a server list (bootstrap.servers,
// A.bootstrap.servers, A.consumer.bootstrap.servers, ...).
func isServersKey(key string) bool {
	return strings.HasSuffix(strings.ToLower(key), "bootstrap.servers")
}
