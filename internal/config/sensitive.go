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
// is sensitive and value is not empty, else value unchanged. Use it for
// values from Cluster.ClientProps before printing them.
func Display(key, value string) string {
	if value != "" && IsSensitive(key) {
		return redacted
	}
	return value
}
