package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Login module class names (the last dot-separated part) that Kafka's Java
// client pairs with each supported mechanism.
const (
	plainModule = "PlainLoginModule"
	scramModule = "ScramLoginModule"
)

// saslMechanism builds the franz-go SASL mechanism for sasl.mechanism mech
// and the sasl.jaas.config value jaas. Supported: PLAIN (pkg/sasl/plain) and
// SCRAM-SHA-256 / SCRAM-SHA-512 (pkg/sasl/scram, KIP-84; tokenauth=true
// selects delegation-token authentication, KIP-48). An empty mech means the
// Java default GSSAPI, which is not supported, and neither are OAUTHBEARER
// and AWS_MSK_IAM.
//
// Errors name the property at fault and never contain the JAAS text.
func saslMechanism(mech, jaas string) (sasl.Mechanism, error) {
	m := strings.ToUpper(strings.TrimSpace(mech))
	var wantModule string
	switch m {
	case "PLAIN":
		wantModule = plainModule
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		wantModule = scramModule
	case "":
		return nil, errors.New("sasl.mechanism: not set, and the Java default GSSAPI (Kerberos) is not supported; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	case "GSSAPI", "OAUTHBEARER", "AWS_MSK_IAM":
		return nil, fmt.Errorf("sasl.mechanism: %s is not supported; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m)
	default:
		return nil, fmt.Errorf("sasl.mechanism: unknown mechanism %q; use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}

	if strings.TrimSpace(jaas) == "" {
		return nil, fmt.Errorf("sasl.jaas.config: required for sasl.mechanism %s (a %s with username and password)", m, wantModule)
	}
	entry, err := parseJAAS(jaas)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	short := entry.module[strings.LastIndexByte(entry.module, '.')+1:]
	if short != wantModule {
		name := entry.module
		if !strings.HasSuffix(name, "LoginModule") {
			name = "class" // the first token may be a misplaced secret: do not show it
		}
		return nil, fmt.Errorf("sasl.jaas.config: login module %s does not fit sasl.mechanism %s (want %s)", name, m, wantModule)
	}
	user, ok := entry.option("username")
	if !ok || user == "" {
		return nil, errors.New("sasl.jaas.config: missing username option")
	}
	pass, ok := entry.option("password")
	if !ok {
		return nil, errors.New("sasl.jaas.config: missing password option")
	}

	switch m {
	case "PLAIN":
		auth := plain.Auth{User: user, Pass: pass}
		return plain.Plain(func(context.Context) (plain.Auth, error) { return auth, nil }), nil
	default:
		token, _ := entry.option("tokenauth")
		auth := scram.Auth{User: user, Pass: pass, IsToken: strings.EqualFold(token, "true")}
		if m == "SCRAM-SHA-256" {
			return auth.AsSha256Mechanism(), nil
		}
		return auth.AsSha512Mechanism(), nil
	}
}
