//go:build kafka

package itest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Cluster aliases, as the harness and the mm2.properties files name them.
const (
	usEast = "us-east"
	euWest = "eu-west"
)

// mustEnv returns the environment variable set by `scripts/kafka.sh up`,
// failing the test when it is absent.
func mustEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the tests through `make test-kafka`, or `eval \"$(scripts/kafka.sh up)\"` first", name)
	}
	return v
}

// uniq returns a random 8-hex-digit suffix for topic and group names.
func uniq(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random suffix: %v", err)
	}
	return hex.EncodeToString(b)
}

// newClient returns a kgo client for bootstrap, closed at test end.
func newClient(t *testing.T, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID("mirrorctl-itest"),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(20 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("client for %s: %v", bootstrap, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// saslOpts returns the options for the SASL_SSL listener: TLS verified
// against the harness CA, SCRAM-SHA-512 as user/password.
func saslOpts(t *testing.T, user, password string) []kgo.Opt {
	t.Helper()
	caFile := mustEnv(t, "MIRRORCTL_KAFKA_CA_PEM")
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("read CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no PEM certificate", caFile)
	}
	return []kgo.Opt{
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()),
	}
}

// pollUntil calls check every 250ms, each call bounded by attemptTimeout,
// until it reports done; it fails the test with the last reason when timeout
// passes. Changes of reason are logged, so a failure shows the progress made.
func pollUntil(ctx context.Context, t *testing.T, timeout time.Duration, what string, check func(context.Context) (done bool, reason string)) {
	t.Helper()
	const attemptTimeout = 30 * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	began := time.Now()
	last := ""
	for {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		done, reason := check(actx)
		acancel()
		if done {
			t.Logf("%s: reached after %v", what, time.Since(began).Round(time.Millisecond))
			return
		}
		if reason != last && ctx.Err() == nil {
			t.Logf("%s: waiting (%v): %s", what, time.Since(began).Round(time.Millisecond), reason)
			last = reason
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not reached within %v: %s", what, timeout, last)
		case <-tick.C:
		}
	}
}

// runScript runs scripts/kafka.sh with args and returns its stdout; stderr
// goes to the test log. A non-zero exit fails the test.
func runScript(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, err := tryScript(ctx, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

func tryScript(ctx context.Context, args ...string) (string, error) {
	script := os.Getenv("MIRRORCTL_KAFKA_SCRIPT")
	if script == "" {
		return "", errors.New("MIRRORCTL_KAFKA_SCRIPT is not set: run `eval \"$(scripts/kafka.sh up)\"` first")
	}
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kafka.sh %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// readAll returns every record of topic that is below the partitions' end
// offsets at the time of the call; opts add client options (e.g. SASL). A
// topic that does not exist is an error.
func readAll(ctx context.Context, bootstrap, topic string, opts ...kgo.Opt) ([]*kgo.Record, error) {
	opts = append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, opts...)
	adm, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s on %s: %w", topic, bootstrap, err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("list end offsets of %s on %s: %w", topic, bootstrap, err)
	}
	want := map[int32]int64{}
	assign := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			assign[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	// Markers are fetched (and left out below) so that a partition ending
	// in one, read committed or not, reaches its end offset.
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}), kgo.KeepControlRecords())...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return recs, fmt.Errorf("reading %s on %s: %w (still waiting for partitions %v)", topic, bootstrap, err, want)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return recs, fmt.Errorf("reading %s on %s: partition %d: %w", topic, bootstrap, errs[0].Partition, errs[0].Err)
		}
		// A read_committed read never gets the records of an aborted
		// transaction, so a partition whose end is one reaches it with
		// the abort marker after it.
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok {
				if r.Offset < end && !r.Attrs.IsControl() {
					recs = append(recs, r)
				}
				if r.Offset+1 >= end {
					delete(want, r.Partition)
				}
			}
		})
	}
	return recs, nil
}

// TestMain gives the tests' replicate processes (and in-process runs) a
// state directory of their own: they keep their instance slot locks there,
// never in the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mirrorctl-itest-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
