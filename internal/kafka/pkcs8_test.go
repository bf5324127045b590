package kafka

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirrorctl/mirrorctl/internal/config"
)

// TestDecryptPKCS8OpenSSL decrypts keys that OpenSSL encrypted (see
// testdata/README.md) and compares them with the unencrypted original.
func TestDecryptPKCS8OpenSSL(t *testing.T) {
	const pass = "fixture-pass"
	plain, err := os.ReadFile(filepath.Join("testdata", "plain-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := pemPrivateKey(plain, config.Secret{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file, pass, wantErr string
	}{
		{"enc-aes256-sha256.pem", pass, ""},
		{"enc-des3-sha1.pem", pass, ""},
		{"enc-aes256-sha256.pem", wrongPass, "wrong ssl.key.password"},
		{"enc-des3-sha1.pem", wrongPass, "wrong ssl.key.password"},
		{"enc-aes256-sha256.pem", "", "encrypted private key needs ssl.key.password"},
		{"enc-pbes1.pem", pass, "only PBES2"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.pass, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := pemPrivateKey(data, config.NewSecret(tt.pass))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), wrongPass) {
					t.Fatalf("error leaks a password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !want.(interface{ Equal(crypto.PrivateKey) bool }).Equal(got) {
				t.Fatal("decrypted key differs from the original")
			}
		})
	}
}

// encryptPKCS8 encrypts key as PBES2 / PBKDF2-HMAC-SHA256 / AES-256-CBC.
func encryptPKCS8(t *testing.T, key crypto.PrivateKey, pass string) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	salt, iv := make([]byte, 16), make([]byte, aes.BlockSize)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(iv)
	const iter = 2048
	k, err := pbkdf2.Key(sha256.New, pass, salt, iter, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := aes.BlockSize - len(der)%aes.BlockSize
	for range pad {
		der = append(der, byte(pad))
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		t.Fatal(err)
	}
	enc := make([]byte, len(der))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, der)

	raw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: b}
	}
	out, err := asn1.Marshal(encryptedPrivateKeyInfo{
		Algorithm: algorithmIdentifier{Algorithm: oidPBES2, Parameters: raw(pbes2Params{
			KeyDerivationFunc: algorithmIdentifier{Algorithm: oidPBKDF2, Parameters: raw(pbkdf2Params{
				Salt: salt, IterationCount: iter, PRF: algorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue},
			})},
			EncryptionScheme: algorithmIdentifier{Algorithm: oidAES256CBC, Parameters: raw(iv)},
		})},
		EncryptedData: enc,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEncryptedPEMKeystore loads an encrypted PEM keystore file and inline
// key through the TLS mapping, with the right and a wrong ssl.key.password.
func TestEncryptedPEMKeystore(t *testing.T) {
	p := newPKI(t, []string{"localhost"}, nil)
	encKey := pemOf("ENCRYPTED PRIVATE KEY", encryptPKCS8(t, p.clientKey, keyPass))
	file := p.write(t, "client-enc.pem", encKey, pemOf("CERTIFICATE", p.client.Raw), pemOf("CERTIFICATE", p.ca.Raw))

	for _, props := range []map[string]string{
		{"ssl.keystore.type": "PEM", "ssl.keystore.location": file},
		{"ssl.keystore.type": "PEM", "ssl.keystore.key": string(encKey), "ssl.keystore.certificate.chain": string(pemOf("CERTIFICATE", p.client.Raw))},
	} {
		props["ssl.key.password"] = keyPass
		cfg, err := loadTLS(t, props)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Certificates) != 1 || !cfg.Certificates[0].Leaf.Equal(p.client) {
			t.Fatalf("client certificate not loaded: %v", cfg.Certificates)
		}
		props["ssl.key.password"] = wrongPass
		if _, err := loadTLS(t, props); err == nil || !strings.Contains(err.Error(), "wrong ssl.key.password") {
			t.Fatalf("wrong key password: error %v", err)
		}
	}
}
