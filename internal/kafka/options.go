package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/buildinfo"
	"github.com/mirrorctl/mirrorctl/internal/config"
)

// Java client defaults and franz-go limits that the mapping depends on.
const (
	javaMaxRequestSize   = 1 << 20   // max.request.size default, bytes
	kgoMinBatchBytes     = 512       // smallest ProducerBatchMaxBytes kgo accepts
	kgoMaxBytes          = 1 << 30   // largest batch / broker write / broker read kgo accepts
	kgoDefaultBrokerIO   = 100 << 20 // kgo's default BrokerMaxWriteBytes and BrokerMaxReadBytes
	kgoMinRequestOverhd  = 100 * time.Millisecond
	kgoMaxRequestOverhd  = 15 * time.Minute
	kgoMinConnIdle       = 100 * time.Millisecond
	kgoMaxConnIdle       = 15 * time.Minute
	kgoMaxMetadataMaxAge = time.Hour
	kgoDefaultMetaMinAge = 5 * time.Second
	kgoMinMetaMinAge     = 10 * time.Millisecond
	javaRetryBackoff     = 100 * time.Millisecond // retry.backoff.ms default
	javaRetryBackoffMax  = time.Second            // retry.backoff.max.ms default (KIP-580)
)

// Options converts the Java Kafka client properties of one cluster and role
// (bootstrap.servers, security.protocol, ssl.*, sasl.*, producer, consumer and
// admin settings) into franz-go kgo options. alias names the cluster in
// errors, e.g. "cluster us-east: ssl.truststore.location: open /x: no such
// file or directory". Values are trimmed, as Java's ConfigDef does.
//
// The returned warnings name, by key only and sorted, the properties that are
// recognised but not applied (e.g. max.poll.records, or ssl.* under
// PLAINTEXT) and the unknown ones; Java plumbing such as key.serializer or
// metric.reporters is ignored silently. Values never appear in warnings.
//
// Mapping (Java key -> kgo option; durations in ms, sizes in bytes):
//
//	bootstrap.servers                 SeedBrokers (comma list, required)
//	client.id                         ClientID (default buildinfo.ClientID(), "mirrorctl/<version>")
//	security.protocol                 PLAINTEXT | SSL (Dialer with TLS, see HandshakeError) | SASL_PLAINTEXT | SASL_SSL (SASL)
//	sasl.mechanism, sasl.jaas.config  PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (see saslMechanism)
//	ssl.*                             tls.Config (see builder.tlsConfig)
//	acks                              RequiredAcks; 0 or 1 also disables idempotence unless enable.idempotence=true (an error)
//	enable.idempotence=false          DisableIdempotentWrite
//	max.in.flight.requests.per.connection  MaxProduceRequestsInflightPerBroker (only without idempotence)
//	transactional.id, transaction.timeout.ms  TransactionalID, TransactionTimeout
//	compression.type, compression.{gzip,lz4,zstd}.level  ProducerBatchCompression (snappy, also the
//	                                  default: WithCompressor(xerialSnappy), the Java producer's framing)
//	linger.ms                         ProducerLinger
//	max.request.size                  ProducerBatchMaxBytes (and BrokerMaxWriteBytes 1 GiB above 100 MiB)
//	buffer.memory                     MaxBufferedBytes
//	delivery.timeout.ms               RecordDeliveryTimeout
//	retries                           RecordRetries
//	retry.backoff.ms, retry.backoff.max.ms  RetryBackoffFn (doubling, no jitter; Java defaults 100 ms, 1 s,
//	                                  applied when unset too) and MetadataMinAge = retry.backoff.ms (at most 5s)
//	request.timeout.ms                RequestTimeoutOverhead (clamped to 100ms..15m) and ProduceRequestTimeout
//	default.api.timeout.ms            RetryTimeout
//	fetch.min.bytes, fetch.max.bytes, fetch.max.wait.ms, max.partition.fetch.bytes
//	                                  FetchMinBytes, FetchMaxBytes (+BrokerMaxReadBytes), FetchMaxWait, FetchMaxPartitionBytes
//	isolation.level                   FetchIsolationLevel
//	auto.offset.reset                 ConsumeResetOffset (earliest, latest, none)
//	check.crcs=false                  DisableFetchCRCValidation
//	client.rack                       Rack
//	allow.auto.create.topics=true     AllowAutoTopicCreation
//	session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms
//	                                  SessionTimeout, HeartbeatInterval, RebalanceTimeout
//	auto.commit.interval.ms, group.instance.id  AutoCommitInterval, InstanceID
//	enable.auto.commit=false          warning only: kgo.DisableAutoCommit needs kgo.ConsumerGroup, which the caller passes
//	connections.max.idle.ms           ConnIdleTimeout (clamped to 100ms..15m; -1 = 15m)
//	metadata.max.age.ms               MetadataMaxAge (at most 1h; below retry.backoff.ms also MetadataMinAge)
//	socket.connection.setup.timeout.ms  DialTimeout
//	enable.metrics.push=false         DisableClientMetrics (KIP-714)
//
// batch.size is recognised but not applied: a kgo batch cap is also the
// largest record the producer accepts, while Java sends a record larger than
// batch.size in a batch of its own as long as it fits max.request.size. The
// cap therefore follows max.request.size, which bounds Java batches too.
//
// Where Java and kgo defaults differ and the key is unset, kgo's default is
// kept: compression (kgo snappy, Java none), auto.offset.reset (kgo earliest,
// Java latest), linger (kgo 10ms, Java 5ms since 4.0). Callers wanting Java's behaviour
// set the key or pass the kgo option after these ones (for the codec,
// kgo.WithCompressor: the snappy compressor set here takes precedence over a
// later kgo.ProducerBatchCompression).
//
// Errors: every invalid property is reported (joined with errors.Join), each
// as "cluster <alias>: <key>: <problem>". Secrets (passwords, the JAAS text,
// inline keys) never appear in errors or warnings.
func Options(alias string, props map[string]string) (opts []kgo.Opt, warnings []string, err error) {
	b := newBuilder(props)
	b.build()
	if b.tls != nil {
		b.add(tlsDialer(b.tls, b.dialTimeout))
	}
	if len(b.errs) > 0 {
		errs := make([]error, len(b.errs))
		for i, e := range b.errs {
			errs[i] = fmt.Errorf("cluster %s: %w", alias, e)
		}
		return nil, nil, errors.Join(errs...)
	}
	slices.Sort(b.warnings)
	return b.opts, b.warnings, nil
}

// builder accumulates options, warnings and errors while reading props. It
// records which keys were consumed so that the rest can be classified.
type builder struct {
	props    map[string]string
	used     map[string]bool
	opts     []kgo.Opt
	warnings []string
	errs     []error
	protocol string
	// tls is the TLS config for SSL and SASL_SSL, dialled by tlsDialer
	// with dialTimeout (socket.connection.setup.timeout.ms, 0 = 10 s).
	tls         *tls.Config
	dialTimeout time.Duration
}

func newBuilder(props map[string]string) *builder {
	return &builder{props: props, used: map[string]bool{}}
}

func (b *builder) add(o ...kgo.Opt) { b.opts = append(b.opts, o...) }

func (b *builder) fail(err error) { b.errs = append(b.errs, err) }

func (b *builder) warn(key, why string) { b.warnings = append(b.warnings, key+": "+why) }

// str returns the trimmed value of key and whether it is present, marking it used.
func (b *builder) str(key string) (string, bool) {
	v, ok := b.props[key]
	if ok {
		b.used[key] = true
	}
	return strings.TrimSpace(v), ok
}

// secret returns the trimmed value of key as a config.Secret.
func (b *builder) secret(key string) config.Secret {
	v, _ := b.str(key)
	return config.NewSecret(v)
}

// set returns the value of key when it is present and non-empty.
func (b *builder) set(key string) (string, bool) {
	v, ok := b.str(key)
	return v, ok && v != ""
}

// integer parses key as a decimal integer in [lo, hi].
func (b *builder) integer(key string, lo, hi int64) (int64, bool) {
	v, ok := b.set(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		b.fail(fmt.Errorf("%s: %q is not an integer", key, v))
		return 0, false
	}
	if n < lo || n > hi {
		b.fail(fmt.Errorf("%s: %d is outside [%d, %d]", key, n, lo, hi))
		return 0, false
	}
	return n, true
}

// bytes32 parses key as a byte count in [lo, MaxInt32].
func (b *builder) bytes32(key string, lo int64) (int32, bool) {
	n, ok := b.integer(key, lo, math.MaxInt32)
	return int32(n), ok
}

// millis parses key as a duration in milliseconds, at least lo ms.
func (b *builder) millis(key string, lo int64) (time.Duration, bool) {
	n, ok := b.integer(key, lo, math.MaxInt64/int64(time.Millisecond))
	return time.Duration(n) * time.Millisecond, ok
}

// boolean parses key as Java does: true or false, in any case.
func (b *builder) boolean(key string) (val, ok bool) {
	v, ok := b.set(key)
	if !ok {
		return false, false
	}
	switch strings.ToLower(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	b.fail(fmt.Errorf("%s: %q is not true or false", key, v))
	return false, false
}

// clamp bounds d to [lo, hi], warning about key when it had to.
func (b *builder) clamp(key string, d, lo, hi time.Duration) time.Duration {
	switch {
	case d < lo:
		b.warn(key, fmt.Sprintf("raised to %v, the client's minimum", lo))
		return lo
	case d > hi:
		b.warn(key, fmt.Sprintf("lowered to %v, the client's maximum", hi))
		return hi
	}
	return d
}

// splitList splits a Java list value on commas, trimming and dropping empties.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (b *builder) build() {
	v, _ := b.str("bootstrap.servers")
	var seeds []string
	for _, s := range splitList(v) {
		// As Kafka's clients do: the host:port at the end of the entry, so that
		// a PROTOCOL:// prefix or user:password@ (ignored, and a secret) never
		// reaches a dial or an error message.
		addr, _ := config.SeedAddress(s)
		seeds = append(seeds, addr)
	}
	if len(seeds) == 0 {
		b.fail(errors.New("bootstrap.servers: required (comma-separated host:port list)"))
	} else {
		b.add(kgo.SeedBrokers(seeds...))
	}

	id := buildinfo.ClientID()
	if v, ok := b.set("client.id"); ok {
		id = v
	}
	b.add(kgo.ClientID(id))

	b.security()
	b.producer()
	b.consumer()
	b.common()
	b.leftovers()
}

func (b *builder) security() {
	b.protocol = "PLAINTEXT"
	if v, ok := b.set("security.protocol"); ok {
		b.protocol = strings.ToUpper(v)
	}
	var useTLS, useSASL bool
	switch b.protocol {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		b.fail(fmt.Errorf("security.protocol: unknown protocol %q; use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", b.protocol))
		return
	}
	if useTLS {
		cfg, err := b.tlsConfig()
		if err != nil {
			b.fail(err)
		} else {
			b.tls = cfg // dialled by tlsDialer, once the dial timeout is known
		}
	}
	if useSASL {
		mech, _ := b.str("sasl.mechanism")
		m, err := saslMechanism(mech, b.secret("sasl.jaas.config").Reveal())
		if err != nil {
			b.fail(err)
		} else {
			b.add(kgo.SASL(m))
		}
	}
}

func (b *builder) producer() {
	acksAll := true
	if v, ok := b.set("acks"); ok {
		switch strings.ToLower(v) {
		case "all", "-1":
			b.add(kgo.RequiredAcks(kgo.AllISRAcks()))
		case "1":
			acksAll = false
			b.add(kgo.RequiredAcks(kgo.LeaderAck()))
		case "0":
			acksAll = false
			b.add(kgo.RequiredAcks(kgo.NoAck()))
		default:
			b.fail(fmt.Errorf("acks: %q is not all, -1, 0 or 1", v))
		}
	}
	idem := acksAll
	if on, ok := b.boolean("enable.idempotence"); ok {
		if on && !acksAll {
			b.fail(errors.New("enable.idempotence: true requires acks=all"))
		}
		idem = on && acksAll
	}
	if !idem {
		b.add(kgo.DisableIdempotentWrite())
	}
	if n, ok := b.integer("max.in.flight.requests.per.connection", 1, math.MaxInt32); ok {
		if idem {
			b.warn("max.in.flight.requests.per.connection", "ignored while idempotence is enabled (the client pipelines idempotent requests itself)")
		} else {
			b.add(kgo.MaxProduceRequestsInflightPerBroker(int(n)))
		}
	}
	if v, ok := b.set("transactional.id"); ok {
		if !idem {
			b.fail(errors.New("transactional.id: requires idempotence (acks=all and enable.idempotence not false)"))
		} else {
			b.add(kgo.TransactionalID(v))
		}
	}
	if d, ok := b.millis("transaction.timeout.ms", 1); ok {
		b.add(kgo.TransactionTimeout(d))
	}

	if v, ok := b.set("compression.type"); ok {
		codecs := map[string]struct {
			codec    kgo.CompressionCodec
			levelKey string
		}{
			"none":   {kgo.NoCompression(), ""},
			"gzip":   {kgo.GzipCompression(), "compression.gzip.level"},
			"snappy": {kgo.SnappyCompression(), ""},
			"lz4":    {kgo.Lz4Compression(), "compression.lz4.level"},
			"zstd":   {kgo.ZstdCompression(), "compression.zstd.level"},
		}
		if c, ok := codecs[strings.ToLower(v)]; ok {
			codec := c.codec
			if c.levelKey != "" {
				if lvl, ok := b.integer(c.levelKey, -131072, 22); ok {
					codec = codec.WithLevel(int(lvl))
				}
			}
			b.add(kgo.ProducerBatchCompression(codec))
			if strings.EqualFold(v, "snappy") {
				b.add(kgo.WithCompressor(xerialSnappy{}))
			}
		} else {
			b.fail(fmt.Errorf("compression.type: %q is not none, gzip, snappy, lz4 or zstd", v))
		}
	} else {
		b.add(kgo.WithCompressor(xerialSnappy{})) // kgo's default codec, snappy, framed as Java frames it
	}
	if d, ok := b.millis("linger.ms", 0); ok {
		b.add(kgo.ProducerLinger(d))
	}
	if _, ok := b.set("batch.size"); ok {
		b.warn("batch.size", "ignored (batches are capped by max.request.size; see kafka.Options)")
	}
	if n, ok := b.integer("max.request.size", 1, kgoMaxBytes); ok {
		if n < kgoMinBatchBytes {
			b.warn("max.request.size", fmt.Sprintf("raised to %d bytes, the client's minimum", kgoMinBatchBytes))
			n = kgoMinBatchBytes
		}
		b.add(kgo.ProducerBatchMaxBytes(int32(n)))
		if n > kgoDefaultBrokerIO {
			b.add(kgo.BrokerMaxWriteBytes(kgoMaxBytes))
		}
	}
	if n, ok := b.integer("buffer.memory", 1, math.MaxInt64); ok {
		b.add(kgo.MaxBufferedBytes(int(min(n, math.MaxInt))))
	}
	if d, ok := b.millis("delivery.timeout.ms", 0); ok {
		b.add(kgo.RecordDeliveryTimeout(d))
	}
	if n, ok := b.integer("retries", 0, math.MaxInt32); ok {
		b.add(kgo.RecordRetries(int(n)))
	}
}

func (b *builder) consumer() {
	if n, ok := b.bytes32("fetch.min.bytes", 0); ok {
		b.add(kgo.FetchMinBytes(n))
	}
	if n, ok := b.integer("fetch.max.bytes", 1, kgoMaxBytes); ok {
		b.add(kgo.FetchMaxBytes(int32(n)))
		if n > kgoDefaultBrokerIO-(1<<20) {
			b.add(kgo.BrokerMaxReadBytes(int32(min(n+(1<<20), kgoMaxBytes))))
		}
	}
	if d, ok := b.millis("fetch.max.wait.ms", 0); ok {
		b.add(kgo.FetchMaxWait(d))
	}
	if n, ok := b.bytes32("max.partition.fetch.bytes", 1); ok {
		b.add(kgo.FetchMaxPartitionBytes(n))
	}
	if v, ok := b.set("isolation.level"); ok {
		switch strings.ToLower(v) {
		case "read_uncommitted":
			b.add(kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
		case "read_committed":
			b.add(kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		default:
			b.fail(fmt.Errorf("isolation.level: %q is not read_uncommitted or read_committed", v))
		}
	}
	if v, ok := b.set("auto.offset.reset"); ok {
		switch strings.ToLower(v) {
		case "earliest":
			b.add(kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		case "latest":
			b.add(kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
		case "none":
			b.add(kgo.ConsumeResetOffset(kgo.NoResetOffset()))
		default:
			b.fail(fmt.Errorf("auto.offset.reset: %q is not earliest, latest or none", v))
		}
	}
	if on, ok := b.boolean("check.crcs"); ok && !on {
		b.add(kgo.DisableFetchCRCValidation())
	}
	if v, ok := b.set("client.rack"); ok {
		b.add(kgo.Rack(v))
	}
	if on, ok := b.boolean("allow.auto.create.topics"); ok && on {
		b.add(kgo.AllowAutoTopicCreation())
	}
	if d, ok := b.millis("session.timeout.ms", 1); ok {
		b.add(kgo.SessionTimeout(d))
		if _, hb := b.props["heartbeat.interval.ms"]; !hb && d < 9*time.Second {
			// kgo's default heartbeat (3 s) must stay below the session
			// timeout; a third of it, as Kafka's defaults are.
			b.add(kgo.HeartbeatInterval(max(d/3, time.Millisecond)))
		}
	}
	if d, ok := b.millis("heartbeat.interval.ms", 1); ok {
		b.add(kgo.HeartbeatInterval(d))
	}
	if d, ok := b.millis("max.poll.interval.ms", 1); ok {
		b.add(kgo.RebalanceTimeout(d))
	}
	if on, ok := b.boolean("enable.auto.commit"); ok && !on {
		// kgo.DisableAutoCommit is a group option that NewClient rejects
		// without kgo.ConsumerGroup, which only the caller knows.
		b.warn("enable.auto.commit", "not applied (pass kgo.DisableAutoCommit with kgo.ConsumerGroup)")
	}
	if d, ok := b.millis("auto.commit.interval.ms", 1); ok {
		b.add(kgo.AutoCommitInterval(d))
	}
	if v, ok := b.set("group.instance.id"); ok {
		b.add(kgo.InstanceID(v))
	}
}

func (b *builder) common() {
	if d, ok := b.millis("request.timeout.ms", 0); ok {
		b.add(kgo.RequestTimeoutOverhead(b.clamp("request.timeout.ms", d, kgoMinRequestOverhd, kgoMaxRequestOverhd)))
		b.add(kgo.ProduceRequestTimeout(d))
	}
	if d, ok := b.millis("default.api.timeout.ms", 0); ok {
		b.add(kgo.RetryTimeout(d))
	}
	// Java's retry defaults apply even when unset: kgo's own (250 ms up
	// to 2.5 s, and 5 s between metadata refreshes) would stall a first
	// produce to a topic created a moment ago, which the broker answers
	// with NOT_LEADER_OR_FOLLOWER until it has loaded the partition.
	// Java clients refresh metadata after such an error no sooner than
	// retry.backoff.ms, so that is kgo's MetadataMinAge too.
	base, hasBase := b.millis("retry.backoff.ms", 0)
	maxB, hasMax := b.millis("retry.backoff.max.ms", 0)
	if !hasBase {
		base = javaRetryBackoff
	}
	if !hasMax {
		maxB = max(javaRetryBackoffMax, base)
	}
	b.add(kgo.RetryBackoffFn(backoff(base, maxB)))
	metaMin := max(base, kgoMinMetaMinAge)
	if n, ok := b.integer("connections.max.idle.ms", -1, math.MaxInt64/int64(time.Millisecond)); ok {
		d := time.Duration(n) * time.Millisecond
		if n == -1 {
			d = kgoMaxConnIdle
		} else {
			d = b.clamp("connections.max.idle.ms", d, kgoMinConnIdle, kgoMaxConnIdle)
		}
		b.add(kgo.ConnIdleTimeout(d))
	}
	if d, ok := b.millis("metadata.max.age.ms", 0); ok {
		d = b.clamp("metadata.max.age.ms", d, kgoMinMetaMinAge, kgoMaxMetadataMaxAge)
		b.add(kgo.MetadataMaxAge(d))
		metaMin = min(metaMin, d)
	}
	b.add(kgo.MetadataMinAge(min(metaMin, kgoDefaultMetaMinAge)))
	if d, ok := b.millis("socket.connection.setup.timeout.ms", 1); ok {
		b.add(kgo.DialTimeout(d))
		b.dialTimeout = d
	}
	if on, ok := b.boolean("enable.metrics.push"); ok && !on {
		b.add(kgo.DisableClientMetrics())
	}
}

// backoff returns a retry backoff that starts at base and doubles per try up
// to maxB, like Java's KIP-580 exponential backoff without the jitter.
func backoff(base, maxB time.Duration) func(int) time.Duration {
	return func(tries int) time.Duration {
		d := base
		for i := 1; i < tries && d < maxB; i++ {
			d *= 2
		}
		return min(d, maxB)
	}
}

// silentKeys are Java plumbing with no meaning for a Go client; they are
// ignored without a warning.
var silentKeys = map[string]bool{
	"key.serializer":            true,
	"value.serializer":          true,
	"key.deserializer":          true,
	"value.deserializer":        true,
	"metric.reporters":          true,
	"metrics.num.samples":       true,
	"metrics.recording.level":   true,
	"metrics.sample.window.ms":  true,
	"auto.include.jmx.reporter": true,
	"config.providers":          true,
}

// silentPrefixes are key prefixes ignored without a warning.
var silentPrefixes = []string{"config.providers.", "metrics.context."}

// ignoredKeys are Java client keys that have no franz-go mapping; each yields
// an "ignored" warning with the reason.
var ignoredKeys = map[string]string{
	"max.poll.records":                         "the caller sizes each poll",
	"group.id":                                 "the command chooses the consumer group",
	"group.protocol":                           "franz-go selects the group protocol",
	"group.remote.assignor":                    "franz-go selects the group protocol",
	"partition.assignment.strategy":            "franz-go uses its own balancers",
	"partitioner.class":                        "franz-go uses its own partitioners",
	"partitioner.ignore.keys":                  "franz-go uses its own partitioners",
	"partitioner.adaptive.partitioning.enable": "franz-go uses its own partitioners",
	"partitioner.availability.timeout.ms":      "franz-go uses its own partitioners",
	"interceptor.classes":                      "Java interceptors cannot run here",
	"max.block.ms":                             "the caller's context bounds blocking calls",
	"send.buffer.bytes":                        "the OS socket defaults are used",
	"receive.buffer.bytes":                     "the OS socket defaults are used",
	"reconnect.backoff.ms":                     "franz-go backs off reconnects itself",
	"reconnect.backoff.max.ms":                 "franz-go backs off reconnects itself",
	"socket.connection.setup.timeout.max.ms":   "only socket.connection.setup.timeout.ms applies",
	"client.dns.lookup":                        "Go's resolver is used",
	"exclude.internal.topics":                  "the caller chooses topics",
	"internal.leave.group.on.close":            "franz-go always leaves the group on close",
	"metadata.max.idle.ms":                     "franz-go tracks only topics in use",
	"metadata.recovery.strategy":               "franz-go re-bootstraps by itself",
	"metadata.recovery.rebootstrap.trigger.ms": "franz-go re-bootstraps by itself",
	"security.providers":                       "Java security providers cannot run here",
	"ssl.cipher.suites":                        "Go's default cipher suites are used",
	"ssl.keymanager.algorithm":                 "Java-only setting",
	"ssl.trustmanager.algorithm":               "Java-only setting",
	"ssl.secure.random.implementation":         "Java-only setting",
	"ssl.engine.factory.class":                 "Java-only setting",
	"ssl.provider":                             "Java-only setting",
	"sasl.client.callback.handler.class":       "Java callback handlers cannot run here",
	"sasl.login.callback.handler.class":        "Java callback handlers cannot run here",
	"sasl.login.class":                         "Java login classes cannot run here",
}

// ignoredPrefixes are key prefixes of Java features without a mapping.
var ignoredPrefixes = map[string]string{
	"sasl.kerberos.":    "GSSAPI is not supported",
	"sasl.oauthbearer.": "OAUTHBEARER is not supported",
	"sasl.login.":       "Java login settings do not apply",
}

// tlsKeys and saslKeys are applied only under a matching security.protocol.
var (
	tlsKeys = []string{
		"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
		"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
		"ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.endpoint.identification.algorithm",
		"ssl.enabled.protocols", "ssl.protocol",
	}
	saslKeys = []string{"sasl.mechanism", "sasl.jaas.config"}
)

// leftovers classifies every key the mapping did not consume.
func (b *builder) leftovers() {
	for key := range b.props {
		if b.used[key] || silentKeys[key] || hasAnyPrefix(key, silentPrefixes) {
			continue
		}
		if why, ok := ignoredKeys[key]; ok {
			b.warn(key, "ignored ("+why+")")
			continue
		}
		if slices.Contains(tlsKeys, key) || slices.Contains(saslKeys, key) {
			b.warn(key, "ignored (security.protocol is "+b.protocol+")")
			continue
		}
		matched := false
		for p, why := range ignoredPrefixes {
			if strings.HasPrefix(key, p) {
				b.warn(key, "ignored ("+why+")")
				matched = true
				break
			}
		}
		if !matched {
			b.warn(key, "unknown property, ignored")
		}
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
