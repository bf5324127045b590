package kafka

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/clientrole"
)

// syncBuffer is a goroutine-safe log sink: franz-go logs from its own goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newLogger returns a logger that records everything, franz-go's demoted
// debug lines included.
func newLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug - 2*demoteBy})), buf
}

// staticProps serves the same properties for every role of each alias.
func staticProps(byAlias map[string]map[string]string) func(alias string, role clientrole.Role) (map[string]string, error) {
	return func(alias string, _ clientrole.Role) (map[string]string, error) {
		p, ok := byAlias[alias]
		if !ok {
			return nil, fmt.Errorf("unknown cluster alias %q", alias)
		}
		return p, nil
	}
}

func newCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "mirror-test")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// roundTrip produces one record through a producer client and reads it back
// through a consumer client, both built by f for alias.
func roundTrip(t *testing.T, f *Factory, alias string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	prod, err := f.Client(alias, clientrole.Producer)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	want := "hello from " + alias
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "mirror-test", Value: []byte(want)}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	cons, err := f.Client(alias, clientrole.Consumer, kgo.ConsumeTopics("mirror-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("consume: %v", errs[0].Err)
		}
		if recs := fs.Records(); len(recs) > 0 {
			if got := string(recs[0].Value); got != want {
				t.Fatalf("consumed %q, want %q", got, want)
			}
			break
		}
	}

	adm, err := f.Admin(alias)
	if err != nil {
		t.Fatal(err)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("admin: %v", err)
	}
	if !topics.Has("mirror-test") {
		t.Fatalf("admin ListTopics = %v, want mirror-test", topics.Names())
	}
}

func TestFactoryPlaintext(t *testing.T) {
	c := newCluster(t)
	logger, _ := newLogger()
	f := NewFactory(staticProps(map[string]map[string]string{
		"us-east": {"bootstrap.servers": strings.Join(c.ListenAddrs(), ","), "auto.offset.reset": "earliest", "acks": "all"},
	}), logger)
	defer f.Close()
	roundTrip(t, f, "us-east")
}

const (
	saslUser = "replicator"
	saslPass = "Scram-Pa55-9xq"
)

func scramJAAS(pass string) string {
	return "org.apache.kafka.common.security.scram.ScramLoginModule required\n  username=\"" + saslUser + "\"\n  password=\"" + pass + "\";"
}

func TestFactorySCRAM(t *testing.T) {
	c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", saslUser, saslPass))
	logger, logs := newLogger()
	brokers := strings.Join(c.ListenAddrs(), ",")
	f := NewFactory(staticProps(map[string]map[string]string{
		"us-east": {
			"bootstrap.servers": brokers, "security.protocol": "SASL_PLAINTEXT",
			"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": scramJAAS(saslPass), "auto.offset.reset": "earliest",
		},
		"wrong-pass": {
			"bootstrap.servers": brokers, "security.protocol": "SASL_PLAINTEXT",
			"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": scramJAAS(wrongPass),
		},
	}), logger)
	defer f.Close()
	roundTrip(t, f, "us-east")

	cl, err := f.Client("wrong-pass", clientrole.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = cl.Ping(ctx)
	if err == nil {
		t.Fatal("ping with a wrong SCRAM password succeeded")
	}
	for _, s := range []string{saslPass, wrongPass} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error leaks a password: %v", err)
		}
		if strings.Contains(logs.String(), s) {
			t.Errorf("logs leak a password")
		}
	}
	if !strings.Contains(logs.String(), "cluster=us-east") {
		t.Errorf("franz-go logs are not routed through the factory logger with the cluster attribute")
	}
}

func TestFactoryMutualTLS(t *testing.T) {
	p := newPKI(t, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	c := newCluster(t, kfake.TLS(&tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{p.server.Raw}, PrivateKey: p.serverKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    poolOf(p.ca),
		MinVersion:   tls.VersionTLS12,
	}))
	logger, _ := newLogger()
	f := NewFactory(staticProps(map[string]map[string]string{
		"eu-west": {
			"bootstrap.servers": strings.Join(c.ListenAddrs(), ","), "security.protocol": "SSL",
			"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p.trustP12, "ssl.truststore.password": storePass,
			"ssl.keystore.location": p.keyJKS, "ssl.keystore.password": storePass, "ssl.key.password": keyPass,
			"auto.offset.reset": "earliest",
		},
	}), logger)
	defer f.Close()
	roundTrip(t, f, "eu-west")
}

func TestFactoryLifecycle(t *testing.T) {
	c := newCluster(t)
	lookups := 0
	f := NewFactory(func(alias string, role clientrole.Role) (map[string]string, error) {
		lookups++
		if alias != "a" {
			return nil, errors.New("no such cluster")
		}
		return map[string]string{"bootstrap.servers": strings.Join(c.ListenAddrs(), ","), "max.poll.records": "10"}, nil
	}, nil)

	if _, err := f.Client("a", "reader"); err == nil || !strings.Contains(err.Error(), `cluster a: unknown client role "reader"`) {
		t.Errorf("bad role: %v", err)
	}
	if _, err := f.Client("b", clientrole.Consumer); err == nil || err.Error() != "cluster b: consumer properties: no such cluster" {
		t.Errorf("lookup error: %v", err)
	}

	a1, err := f.Admin("a")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := f.Admin("a")
	if err != nil {
		t.Fatal(err)
	}
	if a1 != a2 {
		t.Error("Admin is not memoised per alias")
	}
	c1, err := f.Client("a", clientrole.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := f.Client("a", clientrole.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	if c1 == c2 {
		t.Error("Client returned the same client twice")
	}
	c2.Close() // closed by the caller: the factory forgets it
	f.mu.Lock()
	open := len(f.clients)
	f.mu.Unlock()
	if open != 2 {
		t.Errorf("factory tracks %d open clients, want 2 (admin and c1)", open)
	}

	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c1.Ping(ctx); !errors.Is(err, kgo.ErrClientClosed) {
		t.Errorf("c1 after factory Close: ping error %v, want ErrClientClosed", err)
	}
	if _, err := f.Client("a", clientrole.Producer); !errors.Is(err, ErrClosed) {
		t.Errorf("Client after Close: %v, want ErrClosed", err)
	}
	if _, err := f.Admin("a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Admin after Close: %v, want ErrClosed", err)
	}
	f.Close() // idempotent
	if lookups != 4 {
		t.Errorf("props looked up %d times, want 4", lookups)
	}
}

// TestNoSecretsInLogs builds clients for many property sets, valid and
// invalid, through a factory with a logger that records every level, and
// checks that no secret appears in the logs, the errors or the warnings.
func TestNoSecretsInLogs(t *testing.T) {
	p := newPKI(t, []string{"localhost"}, nil)
	c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", saslUser, saslPass))
	brokers := strings.Join(c.ListenAddrs(), ",")
	clientPEM, err := os.ReadFile(p.clientPEM)
	if err != nil {
		t.Fatal(err)
	}
	keyBlock := strings.SplitAfter(string(clientPEM), "-----END PRIVATE KEY-----\n")[0]
	secrets := []string{saslPass, storePass, keyPass, wrongPass, "Hunter2-inline", strings.Split(keyBlock, "\n")[1]}

	plain := func(pass string) string {
		return `org.apache.kafka.common.security.plain.PlainLoginModule required username="` + saslUser + `" password="` + pass + `";`
	}
	cases := map[string]map[string]string{
		"plain-ok":       {"bootstrap.servers": brokers, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": plain(saslPass)},
		"plain-wrong":    {"bootstrap.servers": brokers, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": plain(wrongPass)},
		"jaas-broken":    {"bootstrap.servers": brokers, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": `x.PlainLoginModule required password="` + saslPass},
		"jaas-unquoted":  {"bootstrap.servers": brokers, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": `x.PlainLoginModule required username=u password=Hunter2-inline more"`},
		"ignored-secret": {"bootstrap.servers": brokers, "sasl.jaas.config": plain(saslPass), "ssl.keystore.password": storePass, "unknown.password": "Hunter2-inline"},
		"jks-wrong":      {"bootstrap.servers": brokers, "security.protocol": "SSL", "ssl.keystore.location": p.keyJKS, "ssl.keystore.password": wrongPass, "ssl.key.password": keyPass},
		"jks-keypass":    {"bootstrap.servers": brokers, "security.protocol": "SSL", "ssl.keystore.location": p.keyJKS, "ssl.keystore.password": storePass, "ssl.key.password": wrongPass},
		"p12-wrong":      {"bootstrap.servers": brokers, "security.protocol": "SSL", "ssl.truststore.type": "PKCS12", "ssl.truststore.location": p.trustP12, "ssl.truststore.password": wrongPass},
		"inline-key":     {"bootstrap.servers": brokers, "security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.keystore.key": keyBlock, "ssl.keystore.certificate.chain": "junk"},
		"inline-ok":      {"bootstrap.servers": brokers, "security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.keystore.key": keyBlock, "ssl.keystore.certificate.chain": string(clientPEM), "ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM},
	}

	logger, logs := newLogger()
	f := NewFactory(staticProps(cases), logger)
	defer f.Close()
	var outputs []string
	for alias := range cases {
		_, warnings, err := Options(alias, cases[alias])
		outputs = append(outputs, warnings...)
		if err != nil {
			outputs = append(outputs, err.Error())
			logger.Error("options failed", "cluster", alias, "err", err)
		}
		for _, role := range []clientrole.Role{clientrole.Producer, clientrole.Consumer, clientrole.Admin} {
			cl, err := f.Client(alias, role)
			if err != nil {
				outputs = append(outputs, err.Error())
				logger.Error("client failed", "cluster", alias, "role", role, "err", err)
				continue
			}
			if role != clientrole.Admin {
				continue // one connection attempt per alias is enough
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if err := cl.Ping(ctx); err != nil {
				outputs = append(outputs, err.Error())
				logger.Warn("ping failed", "cluster", alias, "err", err)
			}
			cancel()
		}
	}
	f.Close()

	all := logs.String() + "\n" + strings.Join(outputs, "\n")
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("secret %.4s... appears in logs, errors or warnings", s)
		}
	}
	// The run must actually have exercised the paths it claims to.
	for _, want := range []string{
		"wrong ssl.keystore.password", "wrong ssl.key.password", "wrong ssl.truststore.password",
		"unterminated quoted value", "unknown.password: unknown property, ignored",
		"client property unknown.password not applied", "SASL",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("logs and errors lack %q", want)
		}
	}
}
