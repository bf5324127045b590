package kafka

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Passwords used by the generated stores. They are distinctive so that tests
// can assert they never leak into errors or logs.
const (
	storePass = "St0re-Pa55-zq9"
	keyPass   = "K3y-Pa55-xv7"
	wrongPass = "Wr0ng-Pa55-jj1"
)

// pki is a throw-away CA with a server and a client certificate.
type pki struct {
	ca, server, client        *x509.Certificate
	caKey, serverKey          crypto.Signer
	clientKey                 crypto.Signer // ECDSA P-256
	rsaClient                 *x509.Certificate
	rsaClientKey              *rsa.PrivateKey
	otherCA                   *x509.Certificate // an unrelated CA
	serverNames               []string
	serverIPs                 []net.IP
	dir                       string
	caPEM, clientPEM          string // ca.pem; client key (PKCS#8) + chain
	clientRSAPEM, clientECPEM string // PKCS#1 and SEC 1 variants
	trustJKS, trustP12        string
	keyJKS, keyP12            string
}

func newPKI(t *testing.T, serverNames []string, serverIPs []net.IP) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), serverNames: serverNames, serverIPs: serverIPs}
	var err error
	p.caKey = ecKey(t)
	p.ca = sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "mirrorctl test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, p.caKey.Public(), nil, p.caKey)
	otherKey := ecKey(t)
	p.otherCA = sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "other CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}, otherKey.Public(), nil, otherKey)
	p.serverKey = ecKey(t)
	p.server = sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "broker"}, DNSNames: serverNames, IPAddresses: serverIPs,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, p.serverKey.Public(), p.ca, p.caKey)
	p.clientKey = ecKey(t)
	p.client = sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "mirrorctl-client"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, p.clientKey.Public(), p.ca, p.caKey)
	p.rsaClientKey, err = rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p.rsaClient = sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "mirrorctl-rsa-client"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, p.rsaClientKey.Public(), p.ca, p.caKey)

	pkcs8, err := x509.MarshalPKCS8PrivateKey(p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(p.clientKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	p.caPEM = p.write(t, "ca.pem", pemOf("CERTIFICATE", p.ca.Raw))
	p.clientPEM = p.write(t, "client.pem", pemOf("PRIVATE KEY", pkcs8), pemOf("CERTIFICATE", p.client.Raw), pemOf("CERTIFICATE", p.ca.Raw))
	p.clientECPEM = p.write(t, "client-ec.pem", pemOf("CERTIFICATE", p.client.Raw), pemOf("EC PRIVATE KEY", sec1))
	p.clientRSAPEM = p.write(t, "client-rsa.pem", pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(p.rsaClientKey)), pemOf("CERTIFICATE", p.rsaClient.Raw))

	// JKS truststore and keystore (key entry protected by keyPass).
	ks := keystore.New()
	if err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{
		CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: p.ca.Raw},
	}); err != nil {
		t.Fatal(err)
	}
	p.trustJKS = p.writeJKS(t, "trust.jks", ks)
	ks = keystore.New()
	if err := ks.SetPrivateKeyEntry("client", keystore.PrivateKeyEntry{
		CreationTime: time.Now(), PrivateKey: pkcs8,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: p.client.Raw}, {Type: "X509", Content: p.ca.Raw}},
	}, []byte(keyPass)); err != nil {
		t.Fatal(err)
	}
	p.keyJKS = p.writeJKS(t, "client.jks", ks)

	// PKCS12 truststore and keystore, with go-pkcs12's modern encoder.
	trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{p.ca}, storePass)
	if err != nil {
		t.Fatal(err)
	}
	p.trustP12 = p.write(t, "trust.p12", trust)
	key, err := pkcs12.Modern.Encode(p.clientKey, p.client, []*x509.Certificate{p.ca}, storePass)
	if err != nil {
		t.Fatal(err)
	}
	p.keyP12 = p.write(t, "client.p12", key)
	return p
}

func ecKey(t *testing.T) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var serial int64

func sign(t *testing.T, tmpl *x509.Certificate, pub crypto.PublicKey, parent *x509.Certificate, parentKey crypto.Signer) *x509.Certificate {
	t.Helper()
	serial++
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func (p *pki) write(t *testing.T, name string, parts ...[]byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, bytes.Join(parts, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *pki) writeJKS(t *testing.T, name string, ks keystore.KeyStore) string {
	t.Helper()
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(storePass)); err != nil {
		t.Fatal(err)
	}
	return p.write(t, name, buf.Bytes())
}
