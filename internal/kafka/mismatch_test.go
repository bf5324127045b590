package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// listMismatch lists topics with props and returns how long it took and
// the error.
func listMismatch(t *testing.T, props map[string]string) (time.Duration, error) {
	t.Helper()
	f := NewFactory(staticProps(map[string]map[string]string{"c": props}), nil)
	defer f.Close()
	adm, err := f.Admin("c")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = adm.ListTopics(ctx)
	return time.Since(start), err
}

// TestHandshakeMismatchFailsFast checks that each protocol mismatch fails
// in one dial (not after kgo's retries) with a hint naming the mismatch.
func TestHandshakeMismatchFailsFast(t *testing.T) {
	p := newPKI(t, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})

	// A plaintext Kafka (kfake) reached with SSL: kfake waits for the rest
	// of what it takes for a request, so only the handshake timeout ends it.
	plain, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	took, err := listMismatch(t, map[string]string{"bootstrap.servers": plain.ListenAddrs()[0], "security.protocol": "SSL",
		"ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM, "socket.connection.setup.timeout.ms": "500"})
	var hs *HandshakeError
	if !errors.As(err, &hs) || !strings.Contains(hs.Hint, "PLAINTEXT or SASL_PLAINTEXT") {
		t.Fatalf("SSL to a plaintext listener: %v, want a HandshakeError naming the protocol", err)
	}
	if took > 5*time.Second {
		t.Errorf("SSL to a plaintext listener took %v: retried instead of failing at once", took)
	}
	if Explain(err) == "" {
		t.Errorf("no hint for %v", err)
	}

	// A listener that answers in plaintext (as a broker's error reply would).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("\x00\x00\x00\x08not tls!"))
			c.Close()
		}
	}()
	_, err = listMismatch(t, map[string]string{"bootstrap.servers": ln.Addr().String(), "security.protocol": "SASL_SSL",
		"ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM, "sasl.mechanism": "PLAIN",
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`})
	if !errors.As(err, &hs) || !strings.Contains(hs.Hint, "answered without TLS") {
		t.Fatalf("SASL_SSL to a plaintext listener: %v, want the without-TLS hint", err)
	}

	// PLAINTEXT to a TLS listener: kgo's ErrFirstReadEOF, which Explain turns
	// into the protocol hint.
	cert := tls.Certificate{Certificate: [][]byte{p.server.Raw}, PrivateKey: p.serverKey}
	tln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer tln.Close()
	go func() {
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			go func() { b := make([]byte, 16); c.Read(b); c.Close() }()
		}
	}()
	took, err = listMismatch(t, map[string]string{"bootstrap.servers": tln.Addr().String()})
	var eof *kgo.ErrFirstReadEOF
	if !errors.As(err, &eof) || !strings.Contains(Explain(err), "security.protocol") {
		t.Fatalf("PLAINTEXT to a TLS listener: %v (hint %q)", err, Explain(err))
	}
	if took > 5*time.Second {
		t.Errorf("PLAINTEXT to a TLS listener took %v", took)
	}

	// A certificate the trust store does not hold.
	other := newPKI(t, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	_, err = listMismatch(t, map[string]string{"bootstrap.servers": tln.Addr().String(), "security.protocol": "SSL",
		"ssl.truststore.type": "PEM", "ssl.truststore.location": other.caPEM})
	if !errors.As(err, &hs) || !strings.Contains(hs.Hint, "not trusted") {
		t.Fatalf("untrusted certificate: %v, want the trust-store hint", err)
	}
}
