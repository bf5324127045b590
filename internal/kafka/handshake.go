package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// defaultDialTimeout is Java's socket.connection.setup.timeout.ms default
// (10 s), which is also kgo's dial timeout; the TLS handshake gets the same
// budget on top of the TCP connect.
const defaultDialTimeout = 10 * time.Second

// HandshakeError is returned (wrapped by kgo in "unable to dial: ...") when
// a TLS connection to a broker cannot be set up. It is not retried (see
// Temporary), so a mismatch fails in one dial instead of after every retry
// of every request. Hint names the likely mismatch.
type HandshakeError struct {
	// Addr is the broker address dialled (host:port).
	Addr string
	// Err is the TLS error.
	Err error
	// Hint says what is most likely wrong: the protocol, the port or the
	// trust store.
	Hint string
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("TLS handshake with %s failed: %v; %s", e.Addr, e.Err, e.Hint)
}

// Temporary reports false, and HandshakeError deliberately has no Unwrap:
// kgo retries errors that unwrap to a syscall or temporary network error,
// and a listener speaking another protocol will not change its mind.
func (e *HandshakeError) Temporary() bool { return false }

// tlsDialer returns a kgo.Dialer that connects with TCP within timeout, then
// completes the TLS handshake within timeout, with cfg cloned per dial and
// ServerName set from the broker's host when cfg has none (as
// kgo.DialTLSConfig does). A failed handshake is a *HandshakeError.
func tlsDialer(cfg *tls.Config, timeout time.Duration) kgo.Opt {
	if timeout <= 0 {
		timeout = defaultDialTimeout
	}
	return kgo.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				c.ServerName = host
			}
		}
		conn := tls.Client(raw, c)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := conn.HandshakeContext(hctx); err != nil {
			raw.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &HandshakeError{Addr: addr, Err: err, Hint: handshakeHint(err, timeout)}
		}
		return conn, nil
	})
}

// handshakeHint names the likely cause of a failed TLS handshake.
func handshakeHint(err error, timeout time.Duration) string {
	var recErr tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	var hostErr x509HostnameError
	switch {
	case errors.As(err, &recErr):
		return "the listener answered without TLS: it is a PLAINTEXT or SASL_PLAINTEXT listener, so set security.protocol to one of those, or use the port of the SSL/SASL_SSL listener"
	case errors.As(err, &certErr), errors.As(err, &hostErr):
		return "the broker's certificate is not trusted: check ssl.truststore.location (and type) holds the CA that signed it, and that the bootstrap host name is in the certificate"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("no TLS answer within %v: the listener is most likely PLAINTEXT or SASL_PLAINTEXT (security.protocol = SSL or SASL_SSL expects TLS), or the port is not a Kafka listener", timeout)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "the broker closed the connection during the handshake: the listener is most likely PLAINTEXT or SASL_PLAINTEXT (set security.protocol to match), or it requires a client certificate (ssl.keystore.*)"
	case strings.Contains(err.Error(), "certificate"):
		return "check ssl.truststore.* and, if the broker asks for one, ssl.keystore.*"
	default:
		return "check security.protocol and the port in bootstrap.servers against the broker's listeners"
	}
}

// x509HostnameError matches x509.HostnameError without importing it just
// for the type switch.
type x509HostnameError interface {
	error
	Host() string
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Explain returns a one-line hint for an error from a Kafka call whose
// cause is most likely a security.protocol, sasl.mechanism or port that does
// not match the broker's listener, or "" for any other error. internal/cli
// prints it under the error.
func Explain(err error) string {
	var hs *HandshakeError
	var eof *kgo.ErrFirstReadEOF
	switch {
	case err == nil:
		return ""
	case errors.As(err, &hs):
		return "compare the cluster's security.protocol and bootstrap.servers port with the broker's listeners (`mirrorctl config show` prints them)"
	case errors.As(err, &eof):
		return "the broker dropped the connection at once: compare the cluster's security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), sasl.mechanism and bootstrap.servers port with the listener's (`mirrorctl config show` prints them)"
	case strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED"), strings.Contains(err.Error(), "UNSUPPORTED_SASL_MECHANISM"), strings.Contains(err.Error(), "ILLEGAL_SASL_STATE"):
		return "check sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and the username and password in sasl.jaas.config against what the broker's listener accepts"
	}
	return ""
}
