//go:build kafka

package itest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSASLSSLListenerAndACLs checks the harness's secured listeners on both
// clusters: TLS verified against the harness CA, SCRAM-SHA-512 login, the
// StandardAuthorizer with the admin as super user, and an ordinary user
// denied until a test grants it an ACL.
func TestSASLSSLListenerAndACLs(t *testing.T) {
	admin, adminPW := mustEnv(t, "MIRRORCTL_KAFKA_SCRAM_USER"), mustEnv(t, "MIRRORCTL_KAFKA_SCRAM_PASSWORD")
	app, appPW := mustEnv(t, "MIRRORCTL_KAFKA_APP_USER"), mustEnv(t, "MIRRORCTL_KAFKA_APP_PASSWORD")
	for _, tc := range []struct{ alias, env string }{
		{usEast, "MIRRORCTL_KAFKA_US_EAST_SASL"},
		{euWest, "MIRRORCTL_KAFKA_EU_WEST_SASL"},
	} {
		t.Run(tc.alias, func(t *testing.T) {
			bootstrap := mustEnv(t, tc.env)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			topic := "sasl-" + uniq(t)

			// The admin (a super user) creates, writes and reads.
			adm := newClient(t, bootstrap, saslOpts(t, admin, adminPW)...)
			if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatalf("admin create %s on %s: %v", topic, tc.alias, err)
			}
			if err := adm.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("by-admin")}).FirstErr(); err != nil {
				t.Fatalf("admin produce to %s: %v", topic, err)
			}

			// The app user has no ACLs: its write is refused.
			appCl := newClient(t, bootstrap, append(saslOpts(t, app, appPW), kgo.RetryTimeout(5*time.Second))...)
			err := appCl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("denied")}).FirstErr()
			if !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Fatalf("%s produce without ACLs: got %v, want TOPIC_AUTHORIZATION_FAILED", app, err)
			}

			// A bad password fails authentication.
			bad := newClient(t, bootstrap, saslOpts(t, app, appPW+"x")...)
			pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
			err = bad.Ping(pctx)
			pcancel()
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("produce with a wrong password: got %v, want SASL_AUTHENTICATION_FAILED", err)
			}

			// Granting WRITE and DESCRIBE on the topic lets it write.
			acl := kadm.NewACLs().Allow("User:"+app).AllowHosts().Topics(topic).
				Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
			res, err := kadm.NewClient(adm).CreateACLs(ctx, acl)
			if err == nil {
				for _, r := range res {
					err = errors.Join(err, r.Err)
				}
			}
			if err != nil {
				t.Fatalf("create ACL for %s on %s: %v", app, topic, err)
			}
			pollUntil(ctx, t, 30*time.Second, app+" can write after the ACL", func(ctx context.Context) (bool, string) {
				err := appCl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("by-app")}).FirstErr()
				return err == nil, fmt.Sprint(err)
			})

			// Read back as the admin over SASL_SSL: one record by the
			// admin, one by the app user.
			recs, err := readAll(ctx, bootstrap, topic, saslOpts(t, admin, adminPW)...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, string(r.Value))
			}
			if fmt.Sprint(got) != "[by-admin by-app]" {
				t.Fatalf("records in %s: %q, want [by-admin by-app]", topic, got)
			}
		})
	}
}
