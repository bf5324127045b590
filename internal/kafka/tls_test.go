package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadTLS runs the TLS part of the mapping on props and returns the config or
// the error, checking that no password leaks into the error.
func loadTLS(t *testing.T, props map[string]string) (*tls.Config, error) {
	t.Helper()
	b := newBuilder(props)
	cfg, err := b.tlsConfig()
	if err != nil {
		for _, s := range []string{storePass, keyPass, wrongPass} {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("error leaks a password: %v", err)
			}
		}
	}
	return cfg, err
}

func poolOf(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

func TestTLSStores(t *testing.T) {
	p := newPKI(t, []string{"localhost"}, nil)
	caPEMBytes, err := os.ReadFile(p.caPEM)
	if err != nil {
		t.Fatal(err)
	}
	clientPEMBytes, err := os.ReadFile(p.clientPEM)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		props     map[string]string
		wantRoots *x509.CertPool // nil: system roots
		wantLeaf  *x509.Certificate
		wantChain int // certificates in the client chain
	}{
		{
			name:  "no stores: system roots, no client cert",
			props: map[string]string{},
		},
		{
			name:      "PEM truststore file",
			props:     map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM},
			wantRoots: poolOf(p.ca),
		},
		{
			name:      "inline PEM truststore, type defaulted",
			props:     map[string]string{"ssl.truststore.certificates": string(caPEMBytes)},
			wantRoots: poolOf(p.ca),
		},
		{
			name:      "JKS truststore (default type)",
			props:     map[string]string{"ssl.truststore.location": p.trustJKS, "ssl.truststore.password": storePass},
			wantRoots: poolOf(p.ca),
		},
		{
			name:      "PKCS12 truststore, type in lower case",
			props:     map[string]string{"ssl.truststore.type": "pkcs12", "ssl.truststore.location": p.trustP12, "ssl.truststore.password": storePass},
			wantRoots: poolOf(p.ca),
		},
		{
			name:      "PKCS12 key bundle used as truststore",
			props:     map[string]string{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p.keyP12, "ssl.truststore.password": storePass},
			wantRoots: poolOf(p.client, p.ca),
		},
		{
			name: "PEM keystore file with PKCS#8 key and chain",
			props: map[string]string{
				"ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM,
				"ssl.keystore.type": "PEM", "ssl.keystore.location": p.clientPEM,
			},
			wantRoots: poolOf(p.ca), wantLeaf: p.client, wantChain: 2,
		},
		{
			name:     "PEM keystore file with SEC 1 EC key after the certificate",
			props:    map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": p.clientECPEM},
			wantLeaf: p.client, wantChain: 1,
		},
		{
			name:     "PEM keystore file with PKCS#1 RSA key",
			props:    map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": p.clientRSAPEM},
			wantLeaf: p.rsaClient, wantChain: 1,
		},
		{
			name: "inline PEM key and chain",
			props: map[string]string{
				"ssl.keystore.type":              "PEM",
				"ssl.keystore.key":               string(clientPEMBytes),
				"ssl.keystore.certificate.chain": string(clientPEMBytes),
			},
			wantLeaf: p.client, wantChain: 2,
		},
		{
			name: "JKS keystore with a separate key password",
			props: map[string]string{
				"ssl.keystore.location": p.keyJKS, "ssl.keystore.password": storePass, "ssl.key.password": keyPass,
				"ssl.truststore.location": p.trustJKS, "ssl.truststore.password": storePass,
			},
			wantRoots: poolOf(p.ca), wantLeaf: p.client, wantChain: 2,
		},
		{
			name: "PKCS12 keystore",
			props: map[string]string{
				"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p.keyP12, "ssl.keystore.password": storePass,
			},
			wantLeaf: p.client, wantChain: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadTLS(t, tt.props)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantRoots == nil {
				if cfg.RootCAs != nil {
					t.Errorf("RootCAs = %v, want nil (system roots)", cfg.RootCAs)
				}
			} else if !tt.wantRoots.Equal(cfg.RootCAs) {
				t.Errorf("RootCAs differ from the expected CA pool")
			}
			if tt.wantLeaf == nil {
				if len(cfg.Certificates) != 0 {
					t.Errorf("got %d client certificates, want none", len(cfg.Certificates))
				}
				return
			}
			if len(cfg.Certificates) != 1 {
				t.Fatalf("got %d client certificates, want 1", len(cfg.Certificates))
			}
			c := cfg.Certificates[0]
			if !c.Leaf.Equal(tt.wantLeaf) {
				t.Errorf("leaf = %s, want %s", c.Leaf.Subject, tt.wantLeaf.Subject)
			}
			if len(c.Certificate) != tt.wantChain {
				t.Errorf("chain has %d certificates, want %d", len(c.Certificate), tt.wantChain)
			}
			if c.PrivateKey == nil {
				t.Error("no private key")
			}
			if cfg.InsecureSkipVerify {
				t.Error("InsecureSkipVerify set without ssl.endpoint.identification.algorithm=\"\"")
			}
			if cfg.MinVersion != tls.VersionTLS12 {
				t.Errorf("MinVersion = %x, want TLS 1.2", cfg.MinVersion)
			}
		})
	}
}

func TestTLSErrors(t *testing.T) {
	p := newPKI(t, []string{"localhost"}, nil)
	missing := filepath.Join(p.dir, "missing.jks")
	encrypted := p.write(t, "enc.pem", pemOf("ENCRYPTED PRIVATE KEY", []byte{1, 2, 3}), pemOf("CERTIFICATE", p.client.Raw))
	mismatched := p.write(t, "mismatch.pem", pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(p.rsaClientKey)), pemOf("CERTIFICATE", p.client.Raw))

	tests := []struct {
		name  string
		props map[string]string
		want  []string // substrings of the error
	}{
		{
			name:  "missing truststore file",
			props: map[string]string{"ssl.truststore.location": missing},
			want:  []string{"ssl.truststore.location: open " + missing, "no such file"},
		},
		{
			name:  "JKS truststore, wrong password",
			props: map[string]string{"ssl.truststore.location": p.trustJKS, "ssl.truststore.password": wrongPass},
			want:  []string{"ssl.truststore.location " + p.trustJKS, "JKS truststore", "wrong ssl.truststore.password"},
		},
		{
			name:  "PKCS12 truststore, wrong password",
			props: map[string]string{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p.trustP12, "ssl.truststore.password": wrongPass},
			want:  []string{"ssl.truststore.location " + p.trustP12, "PKCS12 truststore", "wrong ssl.truststore.password"},
		},
		{
			name:  "JKS keystore, wrong store password",
			props: map[string]string{"ssl.keystore.location": p.keyJKS, "ssl.keystore.password": wrongPass, "ssl.key.password": keyPass},
			want:  []string{"ssl.keystore.location " + p.keyJKS, "JKS keystore", "wrong ssl.keystore.password"},
		},
		{
			name:  "JKS keystore, wrong key password",
			props: map[string]string{"ssl.keystore.location": p.keyJKS, "ssl.keystore.password": storePass, "ssl.key.password": wrongPass},
			want:  []string{"ssl.keystore.location " + p.keyJKS, `key entry "client"`, "wrong ssl.key.password"},
		},
		{
			name:  "PKCS12 keystore, wrong password",
			props: map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p.keyP12, "ssl.keystore.password": wrongPass},
			want:  []string{"ssl.keystore.location " + p.keyP12, "PKCS12 keystore", "wrong ssl.keystore.password"},
		},
		{
			name:  "malformed encrypted PEM key",
			props: map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": encrypted, "ssl.key.password": keyPass},
			want:  []string{"ssl.keystore.location " + encrypted, "PEM keystore: malformed encrypted private key"},
		},
		{
			name:  "key does not match certificate",
			props: map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": mismatched},
			want:  []string{"private key does not match"},
		},
		{
			name:  "unknown store type",
			props: map[string]string{"ssl.truststore.type": "BKS", "ssl.truststore.location": p.caPEM},
			want:  []string{`ssl.truststore.type: unsupported store type "BKS"`},
		},
		{
			name:  "inline key without chain",
			props: map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": "x"},
			want:  []string{"ssl.keystore.key: ssl.keystore.key and ssl.keystore.certificate.chain must be set together"},
		},
		{
			name:  "inline truststore with JKS type",
			props: map[string]string{"ssl.truststore.type": "JKS", "ssl.truststore.certificates": "x"},
			want:  []string{"ssl.truststore.certificates: requires ssl.truststore.type PEM, not JKS"},
		},
		{
			name:  "unknown endpoint identification algorithm",
			props: map[string]string{"ssl.endpoint.identification.algorithm": "ldap"},
			want:  []string{`ssl.endpoint.identification.algorithm: unsupported value "ldap"`},
		},
		{
			name:  "SSLv3 enabled",
			props: map[string]string{"ssl.enabled.protocols": "TLSv1.2,SSLv3"},
			want:  []string{`ssl.enabled.protocols: unsupported protocol "SSLv3"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadTLS(t, tt.props)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestTLSVersions(t *testing.T) {
	tests := []struct {
		props    map[string]string
		min, max uint16
	}{
		{map[string]string{}, tls.VersionTLS12, 0},
		{map[string]string{"ssl.enabled.protocols": "TLSv1.2, TLSv1.3"}, tls.VersionTLS12, tls.VersionTLS13},
		{map[string]string{"ssl.enabled.protocols": "TLSv1.3"}, tls.VersionTLS13, tls.VersionTLS13},
		{map[string]string{"ssl.protocol": "TLSv1.2"}, tls.VersionTLS12, tls.VersionTLS12},
		{map[string]string{"ssl.protocol": "TLS"}, tls.VersionTLS12, 0},
		{map[string]string{"ssl.protocol": "TLSv1.3", "ssl.enabled.protocols": "TLSv1.1,TLSv1.2,TLSv1.3"}, tls.VersionTLS11, tls.VersionTLS13},
	}
	for _, tt := range tests {
		cfg, err := loadTLS(t, tt.props)
		if err != nil {
			t.Fatalf("%v: %v", tt.props, err)
		}
		if cfg.MinVersion != tt.min || cfg.MaxVersion != tt.max {
			t.Errorf("%v: versions [%x, %x], want [%x, %x]", tt.props, cfg.MinVersion, cfg.MaxVersion, tt.min, tt.max)
		}
	}
}

// TestEndpointIdentification dials a TLS server whose certificate names
// only broker.example, at 127.0.0.1: the default (https) rejects the host
// name, "" accepts it while still verifying the chain.
func TestEndpointIdentification(t *testing.T) {
	p := newPKI(t, []string{"broker.example"}, nil)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{p.server.Raw}, PrivateKey: p.serverKey}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()

	otherCA := p.write(t, "other.pem", pemOf("CERTIFICATE", p.otherCA.Raw))
	tests := []struct {
		name    string
		props   map[string]string
		wantErr string
	}{
		{"https rejects a host name mismatch", map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM}, "127.0.0.1"},
		{"empty algorithm accepts it", map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM, "ssl.endpoint.identification.algorithm": ""}, ""},
		{"empty algorithm still checks the chain", map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": otherCA, "ssl.endpoint.identification.algorithm": ""}, "unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadTLS(t, tt.props)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ServerName = "127.0.0.1" // what kgo sets from the broker address
			conn, err := tls.DialWithDialer(&net.Dialer{}, "tcp", ln.Addr().String(), cfg)
			if err == nil {
				conn.Close()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("handshake failed: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("handshake error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
