package kafka

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/mirrorctl/mirrorctl/internal/config"
)

// Store types accepted for ssl.truststore.type and ssl.keystore.type. Java's
// default for both is JKS.
const (
	storeJKS    = "JKS"
	storePKCS12 = "PKCS12"
	storePEM    = "PEM"
)

// tlsConfig builds the client TLS configuration from the ssl.* properties, as
// Java's DefaultSslEngineFactory would:
//
//   - trust: ssl.truststore.{type,location,password} or inline PEM in
//     ssl.truststore.certificates; with neither, the system roots.
//   - client certificate (mTLS): ssl.keystore.{type,location,password} with
//     ssl.key.password for the key entry (JKS), or inline PEM in
//     ssl.keystore.key + ssl.keystore.certificate.chain; with neither, none.
//   - ssl.endpoint.identification.algorithm: "https" (default) verifies the
//     broker host name; "" verifies the chain only.
//   - ssl.enabled.protocols / ssl.protocol bound the TLS versions (Go's floor
//     is TLS 1.2 unless TLSv1 or TLSv1.1 is enabled explicitly).
//
// Encrypted PEM keys ("ENCRYPTED PRIVATE KEY", PKCS#8 with PBES2) are
// decrypted with ssl.key.password. Unsupported: PBES1 and legacy Proc-Type
// PEM encryption, a PKCS12 key protected by a password other than the
// store's, and PKCS12 truststores of bare certificates lacking Java's
// trusted-certificate attribute. Errors name the property and, for files, the path;
// they never contain a password or key material.
func (b *builder) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}

	roots, err := b.trustPool()
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = roots

	cert, err := b.clientCert()
	if err != nil {
		return nil, err
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}

	if err := b.tlsVersions(cfg); err != nil {
		return nil, err
	}

	alg, set := b.str("ssl.endpoint.identification.algorithm")
	switch {
	case set && alg == "":
		// Java semantics: skip the host name check but still verify the chain.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyChainOnly(roots)
	case !set || strings.EqualFold(alg, "https"):
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm: unsupported value %q; use https or an empty value", alg)
	}
	return cfg, nil
}

// verifyChainOnly returns a tls.Config.VerifyConnection that checks the
// broker's chain against roots (nil = system roots) without a host name.
func verifyChainOnly(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: broker sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
			Roots:         roots,
			Intermediates: inter,
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		return err
	}
}

// storeType returns the upper-cased value of key (default JKS) and checks it.
func (b *builder) storeType(key string) (string, error) {
	t, ok := b.str(key)
	if !ok || t == "" {
		return storeJKS, nil
	}
	t = strings.ToUpper(t)
	switch t {
	case storeJKS, storePKCS12, storePEM:
		return t, nil
	}
	return "", fmt.Errorf("%s: unsupported store type %q; use JKS, PKCS12 or PEM", key, t)
}

// trustPool returns the roots to verify brokers with, or nil for the system roots.
func (b *builder) trustPool() (*x509.CertPool, error) {
	typ, err := b.storeType("ssl.truststore.type")
	if err != nil {
		return nil, err
	}
	_, typeSet := b.str("ssl.truststore.type")
	inline, hasInline := b.str("ssl.truststore.certificates")
	loc, hasLoc := b.str("ssl.truststore.location")
	pass := b.secret("ssl.truststore.password")
	hasInline, hasLoc = hasInline && inline != "", hasLoc && loc != ""

	var certs []*x509.Certificate
	switch {
	case hasInline && hasLoc:
		return nil, errors.New("ssl.truststore.certificates: cannot be combined with ssl.truststore.location")
	case hasInline:
		if typeSet && typ != storePEM {
			return nil, fmt.Errorf("ssl.truststore.certificates: requires ssl.truststore.type PEM, not %s", typ)
		}
		certs, err = pemCertificates([]byte(inline))
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.certificates: %w", err)
		}
	case hasLoc:
		data, err := os.ReadFile(loc)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		certs, err = decodeTrustStore(typ, data, pass)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location %s: %s truststore: %w", loc, typ, err)
		}
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// decodeTrustStore extracts the trusted certificates of a truststore file.
func decodeTrustStore(typ string, data []byte, pass config.Secret) ([]*x509.Certificate, error) {
	switch typ {
	case storePEM:
		return pemCertificates(data)
	case storePKCS12:
		certs, err := pkcs12.DecodeTrustStore(data, pass.Reveal())
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			return nil, errors.New("wrong ssl.truststore.password, or the file is corrupt")
		}
		if err != nil {
			// Not a Java trust store (no trusted-certificate attribute on
			// every certificate): accept a key-and-chain bundle, trusting
			// its certificates, as Java does with a PKCS12 keystore.
			_, leaf, cas, cerr := pkcs12.DecodeChain(data, pass.Reveal())
			if cerr != nil {
				return nil, err
			}
			certs = append([]*x509.Certificate{leaf}, cas...)
		}
		if len(certs) == 0 {
			return nil, errors.New("no certificates")
		}
		return certs, nil
	default:
		ks, err := loadJKS(data, pass, "ssl.truststore.password")
		if err != nil {
			return nil, err
		}
		var certs []*x509.Certificate
		for _, alias := range ks.Aliases() {
			var der []byte
			switch {
			case ks.IsTrustedCertificateEntry(alias):
				e, err := ks.GetTrustedCertificateEntry(alias)
				if err != nil {
					return nil, fmt.Errorf("entry %q: %w", alias, err)
				}
				der = e.Certificate.Content
			case ks.IsPrivateKeyEntry(alias):
				// Java trusts the chain certificates of key entries too.
				chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
				if err != nil || len(chain) == 0 {
					continue
				}
				der = chain[len(chain)-1].Content
			default:
				continue
			}
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", alias, err)
			}
			certs = append(certs, c)
		}
		if len(certs) == 0 {
			return nil, errors.New("no trusted certificate entries")
		}
		return certs, nil
	}
}

// loadJKS parses a JKS file and checks its integrity with pass; passKey names
// the property in the wrong-password error.
func loadJKS(data []byte, pass config.Secret, passKey string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithMinPasswordLen(0))
	if err := ks.Load(bytes.NewReader(data), []byte(pass.Reveal())); err != nil {
		if strings.Contains(err.Error(), "invalid digest") {
			return ks, fmt.Errorf("wrong %s, or the file is corrupt", passKey)
		}
		return ks, err
	}
	return ks, nil
}

// clientCert returns the client certificate for mutual TLS, or nil.
func (b *builder) clientCert() (*tls.Certificate, error) {
	typ, err := b.storeType("ssl.keystore.type")
	if err != nil {
		return nil, err
	}
	_, typeSet := b.str("ssl.keystore.type")
	keyPEM, hasKey := b.str("ssl.keystore.key")
	chainPEM, hasChain := b.str("ssl.keystore.certificate.chain")
	loc, hasLoc := b.str("ssl.keystore.location")
	pass := b.secret("ssl.keystore.password")
	keyPass := b.secret("ssl.key.password")
	hasKey, hasChain, hasLoc = hasKey && keyPEM != "", hasChain && chainPEM != "", hasLoc && loc != ""

	switch {
	case (hasKey || hasChain) && hasLoc:
		return nil, errors.New("ssl.keystore.key: cannot be combined with ssl.keystore.location")
	case hasKey != hasChain:
		return nil, errors.New("ssl.keystore.key: ssl.keystore.key and ssl.keystore.certificate.chain must be set together")
	case hasKey:
		if typeSet && typ != storePEM {
			return nil, fmt.Errorf("ssl.keystore.key: requires ssl.keystore.type PEM, not %s", typ)
		}
		key, err := pemPrivateKey([]byte(keyPEM), keyPass)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.key: %w", err)
		}
		chain, err := pemCertificates([]byte(chainPEM))
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.certificate.chain: %w", err)
		}
		c, err := certificate(key, chain)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.key: %w", err)
		}
		return c, nil
	case hasLoc:
		data, err := os.ReadFile(loc)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		key, chain, err := decodeKeyStore(typ, data, pass, keyPass)
		if err == nil {
			var c *tls.Certificate
			if c, err = certificate(key, chain); err == nil {
				return c, nil
			}
		}
		return nil, fmt.Errorf("ssl.keystore.location %s: %s keystore: %w", loc, typ, err)
	default:
		return nil, nil
	}
}

// decodeKeyStore returns the private key and certificate chain (leaf first)
// of a keystore file. For JKS the key entry is decrypted with keyPass, or with
// pass when keyPass is empty (as Java does); PKCS12 uses pass only.
func decodeKeyStore(typ string, data []byte, pass, keyPass config.Secret) (crypto.PrivateKey, []*x509.Certificate, error) {
	switch typ {
	case storePEM:
		key, err := pemPrivateKey(data, keyPass)
		if err != nil {
			return nil, nil, err
		}
		chain, err := pemCertificates(data)
		return key, chain, err
	case storePKCS12:
		key, leaf, cas, err := pkcs12.DecodeChain(data, pass.Reveal())
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			return nil, nil, errors.New("wrong ssl.keystore.password, or the file is corrupt")
		}
		if err != nil {
			return nil, nil, err
		}
		return key, append([]*x509.Certificate{leaf}, cas...), nil
	default:
		ks, err := loadJKS(data, pass, "ssl.keystore.password")
		if err != nil {
			return nil, nil, err
		}
		var alias string
		for _, a := range ks.Aliases() {
			if ks.IsPrivateKeyEntry(a) {
				alias = a
				break
			}
		}
		if alias == "" {
			return nil, nil, errors.New("no private key entry")
		}
		kp := keyPass
		if kp.IsZero() {
			kp = pass
		}
		entry, err := ks.GetPrivateKeyEntry(alias, []byte(kp.Reveal()))
		if err != nil {
			return nil, nil, fmt.Errorf("key entry %q: wrong ssl.key.password (or ssl.keystore.password when ssl.key.password is unset)", alias)
		}
		key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("key entry %q: %w", alias, err)
		}
		var chain []*x509.Certificate
		for _, c := range entry.CertificateChain {
			cert, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("key entry %q: %w", alias, err)
			}
			chain = append(chain, cert)
		}
		return key, chain, nil
	}
}

// certificate pairs key with chain (leaf first), checking that they match.
func certificate(key crypto.PrivateKey, chain []*x509.Certificate) (*tls.Certificate, error) {
	if len(chain) == 0 {
		return nil, errors.New("no certificate for the private key")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(chain[0].PublicKey) {
		return nil, errors.New("private key does not match the first certificate of the chain")
	}
	c := &tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, cert := range chain {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	return c, nil
}

// pemCertificates returns every CERTIFICATE block of data, in order.
func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := data; ; {
		var bl *pem.Block
		bl, rest = pem.Decode(rest)
		if bl == nil {
			break
		}
		if bl.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(bl.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return certs, nil
}

// pemPrivateKey returns the one private key in data: PKCS#8 "PRIVATE KEY",
// PKCS#1 "RSA PRIVATE KEY", SEC 1 "EC PRIVATE KEY", or PKCS#8 "ENCRYPTED
// PRIVATE KEY" (PBES2, see decryptPKCS8) decrypted with keyPass
// (ssl.key.password). Legacy Proc-Type encryption is refused.
func pemPrivateKey(data []byte, keyPass config.Secret) (crypto.PrivateKey, error) {
	var found []crypto.PrivateKey
	for rest := data; ; {
		var bl *pem.Block
		bl, rest = pem.Decode(rest)
		if bl == nil {
			break
		}
		if !strings.HasSuffix(bl.Type, "PRIVATE KEY") {
			continue
		}
		if bl.Headers["Proc-Type"] != "" {
			return nil, errors.New("legacy OpenSSL-encrypted PEM keys (Proc-Type header) are not supported; convert with openssl pkcs8 -topk8 -v2 aes-256-cbc")
		}
		var (
			k   crypto.PrivateKey
			err error
		)
		switch bl.Type {
		case "ENCRYPTED PRIVATE KEY":
			if keyPass.IsZero() {
				return nil, errors.New("encrypted private key needs ssl.key.password")
			}
			der, derr := decryptPKCS8(bl.Bytes, keyPass)
			if derr != nil {
				return nil, derr
			}
			if k, err = x509.ParsePKCS8PrivateKey(der); err != nil {
				return nil, errWrongKeyPassword
			}
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(bl.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(bl.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(bl.Bytes)
		default:
			return nil, fmt.Errorf("unsupported PEM block %q", bl.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.ToLower(bl.Type), err)
		}
		found = append(found, k)
	}
	switch len(found) {
	case 0:
		return nil, errors.New("no PEM private key block")
	case 1:
		return found[0], nil
	default:
		return nil, fmt.Errorf("%d private keys; want exactly one", len(found))
	}
}

// tlsVersionNames maps Java protocol names to Go TLS versions.
var tlsVersionNames = map[string]uint16{
	"TLSV1":   tls.VersionTLS10,
	"TLSV1.0": tls.VersionTLS10,
	"TLSV1.1": tls.VersionTLS11,
	"TLSV1.2": tls.VersionTLS12,
	"TLSV1.3": tls.VersionTLS13,
}

// tlsVersions applies ssl.enabled.protocols (lowest -> MinVersion, highest ->
// MaxVersion) and ssl.protocol (a specific version caps MaxVersion, as a Java
// SSLContext of that version would; "TLS" means any).
func (b *builder) tlsVersions(cfg *tls.Config) error {
	if v, ok := b.str("ssl.enabled.protocols"); ok && v != "" {
		var vers []uint16
		for _, p := range splitList(v) {
			ver, ok := tlsVersionNames[strings.ToUpper(p)]
			if !ok {
				return fmt.Errorf("ssl.enabled.protocols: unsupported protocol %q; use TLSv1.2 or TLSv1.3", p)
			}
			vers = append(vers, ver)
		}
		if len(vers) > 0 {
			cfg.MinVersion, cfg.MaxVersion = slices.Min(vers), slices.Max(vers)
		}
	}
	if v, ok := b.str("ssl.protocol"); ok && v != "" && !strings.EqualFold(v, "TLS") {
		ver, ok := tlsVersionNames[strings.ToUpper(v)]
		if !ok {
			return fmt.Errorf("ssl.protocol: unsupported protocol %q; use TLS, TLSv1.2 or TLSv1.3", v)
		}
		if cfg.MaxVersion == 0 || ver < cfg.MaxVersion {
			cfg.MaxVersion = ver
		}
		if cfg.MinVersion > cfg.MaxVersion {
			return fmt.Errorf("ssl.protocol: %s is below the lowest enabled TLS version (ssl.enabled.protocols, default TLSv1.2)", v)
		}
	}
	return nil
}
