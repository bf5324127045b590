package kafka

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/mirrorctl/mirrorctl/internal/buildinfo"
)

// build maps props (with a bootstrap added) and returns an unconnected client
// whose OptValue reports the resulting settings.
func build(t *testing.T, props map[string]string) (*kgo.Client, []string) {
	t.Helper()
	p := map[string]string{"bootstrap.servers": "127.0.0.1:1"}
	for k, v := range props {
		p[k] = v
	}
	opts, warnings, err := Options("test", p)
	if err != nil {
		t.Fatalf("Options: %v", err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl, warnings
}

func TestOptionsMapping(t *testing.T) {
	tests := []struct {
		key, val string
		opt      any // the kgo option function whose value is checked
		want     any
	}{
		{"bootstrap.servers", " a:9092, b:9093 ,,c:9094", kgo.SeedBrokers, []string{"a:9092", "b:9093", "c:9094"}},
		{"client.id", "mm2-east", kgo.ClientID, "mm2-east"},
		{"acks", "all", kgo.RequiredAcks, kgo.AllISRAcks()},
		{"acks", "-1", kgo.RequiredAcks, kgo.AllISRAcks()},
		{"acks", "1", kgo.RequiredAcks, kgo.LeaderAck()},
		{"acks", "0", kgo.RequiredAcks, kgo.NoAck()},
		{"acks", "1", kgo.DisableIdempotentWrite, true},
		{"acks", "all", kgo.DisableIdempotentWrite, false},
		{"enable.idempotence", "FALSE", kgo.DisableIdempotentWrite, true},
		{"compression.type", "none", kgo.ProducerBatchCompression, []kgo.CompressionCodec{kgo.NoCompression()}},
		{"compression.type", "gzip", kgo.ProducerBatchCompression, []kgo.CompressionCodec{kgo.GzipCompression()}},
		{"compression.type", "Snappy", kgo.ProducerBatchCompression, []kgo.CompressionCodec{kgo.SnappyCompression()}},
		{"compression.type", "lz4", kgo.ProducerBatchCompression, []kgo.CompressionCodec{kgo.Lz4Compression()}},
		{"compression.type", "zstd", kgo.ProducerBatchCompression, []kgo.CompressionCodec{kgo.ZstdCompression()}},
		{"linger.ms", "25", kgo.ProducerLinger, 25 * time.Millisecond},
		{"max.request.size", "2097152", kgo.ProducerBatchMaxBytes, int32(2097152)},
		{"max.request.size", "200", kgo.ProducerBatchMaxBytes, int32(512)},
		{"max.request.size", "209715200", kgo.BrokerMaxWriteBytes, int32(1 << 30)},
		{"buffer.memory", "33554432", kgo.MaxBufferedBytes, int64(33554432)},
		{"delivery.timeout.ms", "120000", kgo.RecordDeliveryTimeout, 2 * time.Minute},
		{"retries", "7", kgo.RecordRetries, int64(7)},
		{"request.timeout.ms", "30000", kgo.RequestTimeoutOverhead, 30 * time.Second},
		{"request.timeout.ms", "30000", kgo.ProduceRequestTimeout, 30 * time.Second},
		{"request.timeout.ms", "3600000", kgo.RequestTimeoutOverhead, 15 * time.Minute},
		{"default.api.timeout.ms", "60000", kgo.RetryTimeout, time.Minute},
		{"transactional.id", "tx-1", kgo.TransactionalID, "tx-1"},
		{"transaction.timeout.ms", "60000", kgo.TransactionTimeout, time.Minute},
		{"fetch.min.bytes", "1024", kgo.FetchMinBytes, int32(1024)},
		{"fetch.max.bytes", "52428800", kgo.FetchMaxBytes, int32(52428800)},
		{"fetch.max.bytes", "209715200", kgo.BrokerMaxReadBytes, int32(209715200 + 1<<20)},
		{"fetch.max.wait.ms", "250", kgo.FetchMaxWait, 250 * time.Millisecond},
		{"max.partition.fetch.bytes", "1048576", kgo.FetchMaxPartitionBytes, int32(1048576)},
		{"isolation.level", "read_committed", kgo.FetchIsolationLevel, int8(1)},
		{"isolation.level", "READ_UNCOMMITTED", kgo.FetchIsolationLevel, int8(0)},
		{"auto.offset.reset", "earliest", kgo.ConsumeResetOffset, kgo.NewOffset().AtStart()},
		{"auto.offset.reset", "latest", kgo.ConsumeResetOffset, kgo.NewOffset().AtEnd()},
		{"auto.offset.reset", "none", kgo.ConsumeResetOffset, kgo.NoResetOffset()},
		{"client.rack", "use1-az1", kgo.Rack, "use1-az1"},
		{"allow.auto.create.topics", "true", kgo.AllowAutoTopicCreation, true},
		{"allow.auto.create.topics", "false", kgo.AllowAutoTopicCreation, false},
		{"session.timeout.ms", "10000", kgo.SessionTimeout, 10 * time.Second},
		{"heartbeat.interval.ms", "3000", kgo.HeartbeatInterval, 3 * time.Second},
		{"max.poll.interval.ms", "300000", kgo.RebalanceTimeout, 5 * time.Minute},
		{"auto.commit.interval.ms", "1000", kgo.AutoCommitInterval, time.Second},
		{"connections.max.idle.ms", "540000", kgo.ConnIdleTimeout, 9 * time.Minute},
		{"connections.max.idle.ms", "-1", kgo.ConnIdleTimeout, 15 * time.Minute},
		{"connections.max.idle.ms", "10", kgo.ConnIdleTimeout, 100 * time.Millisecond},
		{"metadata.max.age.ms", "300000", kgo.MetadataMaxAge, 5 * time.Minute},
		{"metadata.max.age.ms", "7200000", kgo.MetadataMaxAge, time.Hour},
		{"metadata.max.age.ms", "1000", kgo.MetadataMinAge, 100 * time.Millisecond},
		{"metadata.max.age.ms", "50", kgo.MetadataMinAge, 50 * time.Millisecond},
		{"retry.backoff.ms", "250", kgo.MetadataMinAge, 250 * time.Millisecond},
		{"retry.backoff.ms", "60000", kgo.MetadataMinAge, 5 * time.Second},
		{"socket.connection.setup.timeout.ms", "10000", kgo.DialTimeout, 10 * time.Second},
		{"enable.metrics.push", "false", kgo.DisableClientMetrics, true},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.val, func(t *testing.T) {
			cl, _ := build(t, map[string]string{tt.key: tt.val})
			got := cl.OptValue(tt.opt)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	cl, warnings := build(t, nil)
	if got := cl.OptValue(kgo.ClientID); got != buildinfo.ClientID() {
		t.Errorf("client id = %v, want %s", got, buildinfo.ClientID())
	}
	if got := cl.OptValue(kgo.DialTLSConfig); got != nil && !reflect.ValueOf(got).IsNil() {
		t.Errorf("TLS configured under PLAINTEXT: %v", got)
	}
	if got := cl.OptValue(kgo.SASL); got != nil && !reflect.ValueOf(got).IsNil() {
		t.Errorf("SASL configured under PLAINTEXT: %v", got)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none", warnings)
	}
}

func TestOptionsFlags(t *testing.T) {
	cl, _ := build(t, map[string]string{"check.crcs": "false", "group.instance.id": "i-1"})
	if got := cl.OptValue(kgo.DisableFetchCRCValidation); got != true {
		t.Errorf("DisableFetchCRCValidation = %v", got)
	}
	if got := cl.OptValue(kgo.InstanceID); got != "i-1" {
		t.Errorf("InstanceID = %v", got)
	}

	cl, _ = build(t, map[string]string{"compression.type": "zstd", "compression.zstd.level": "9"})
	if got := cl.OptValue(kgo.ProducerBatchCompression); !reflect.DeepEqual(got, []kgo.CompressionCodec{kgo.ZstdCompression().WithLevel(9)}) {
		t.Errorf("zstd level 9: %v", got)
	}

	cl, _ = build(t, map[string]string{"acks": "1", "max.in.flight.requests.per.connection": "3"})
	if got := cl.OptValue(kgo.MaxProduceRequestsInflightPerBroker); got != 3 {
		t.Errorf("MaxProduceRequestsInflightPerBroker = %v, want 3", got)
	}

	cl, _ = build(t, map[string]string{"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512",
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`})
	if sasls, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(sasls) != 1 || sasls[0].Name() != "SCRAM-SHA-512" {
		t.Errorf("SASL = %v, want one SCRAM-SHA-512 mechanism", cl.OptValue(kgo.SASL))
	}

	cl, _ = build(t, map[string]string{"security.protocol": "SSL"})
	if got := cl.OptValue(kgo.Dialer); got == nil {
		t.Errorf("no TLS Dialer under SSL")
	}
}

func TestRetryBackoff(t *testing.T) {
	tests := []struct {
		props map[string]string
		want  []time.Duration // for tries 1..n
	}{
		{map[string]string{"retry.backoff.ms": "100"}, []time.Duration{100, 200, 400, 800, 1000, 1000}},
		{map[string]string{"retry.backoff.ms": "50", "retry.backoff.max.ms": "150"}, []time.Duration{50, 100, 150, 150}},
		{map[string]string{"retry.backoff.max.ms": "300"}, []time.Duration{100, 200, 300}},
		{map[string]string{"retry.backoff.ms": "2000"}, []time.Duration{2000, 2000}},
		{nil, []time.Duration{100, 200, 400, 800, 1000, 1000}}, // Java's defaults, not kgo's
	}
	for _, tt := range tests {
		cl, _ := build(t, tt.props)
		fn := cl.OptValue(kgo.RetryBackoffFn).(func(int) time.Duration)
		for i, w := range tt.want {
			if got := fn(i + 1); got != w*time.Millisecond {
				t.Errorf("%v: try %d backoff %v, want %v", tt.props, i+1, got, w*time.Millisecond)
			}
		}
	}
}

func TestOptionsWarnings(t *testing.T) {
	_, warnings := build(t, map[string]string{
		"max.poll.records":                      "500",
		"batch.size":                            "16384",
		"key.serializer":                        "org.apache.kafka.common.serialization.ByteArraySerializer",
		"config.providers.env.class":            "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
		"metric.reporters":                      "",
		"ssl.truststore.location":               "/nonexistent",
		"ssl.truststore.password":               "Tru5t-pw",
		"sasl.kerberos.service.name":            "kafka",
		"sasl.jaas.config":                      "secret stuff",
		"frobnicate.ms":                         "7",
		"group.id":                              "g",
		"max.in.flight.requests.per.connection": "5",
		"enable.auto.commit":                    "false",
	})
	want := []string{
		"batch.size: ignored (batches are capped by max.request.size; see kafka.Options)",
		"enable.auto.commit: not applied (pass kgo.DisableAutoCommit with kgo.ConsumerGroup)",
		"frobnicate.ms: unknown property, ignored",
		"group.id: ignored (the command chooses the consumer group)",
		"max.in.flight.requests.per.connection: ignored while idempotence is enabled (the client pipelines idempotent requests itself)",
		"max.poll.records: ignored (the caller sizes each poll)",
		"sasl.jaas.config: ignored (security.protocol is PLAINTEXT)",
		"sasl.kerberos.service.name: ignored (GSSAPI is not supported)",
		"ssl.truststore.location: ignored (security.protocol is PLAINTEXT)",
		"ssl.truststore.password: ignored (security.protocol is PLAINTEXT)",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
}

func TestOptionsErrors(t *testing.T) {
	const pw = "Err-Pa55-w0rd"
	tests := []struct {
		name  string
		props map[string]string
		want  []string
	}{
		{"no bootstrap", map[string]string{"bootstrap.servers": " , "}, []string{"cluster us-east: bootstrap.servers: required"}},
		{"bad protocol", map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SSL_PLAINTEXT"}, []string{`cluster us-east: security.protocol: unknown protocol "SSL_PLAINTEXT"`}},
		{"bad acks", map[string]string{"bootstrap.servers": "a:1", "acks": "2"}, []string{`cluster us-east: acks: "2" is not all, -1, 0 or 1`}},
		{"idempotence needs acks=all", map[string]string{"bootstrap.servers": "a:1", "acks": "1", "enable.idempotence": "true"}, []string{"cluster us-east: enable.idempotence: true requires acks=all"}},
		{"transactions need idempotence", map[string]string{"bootstrap.servers": "a:1", "enable.idempotence": "false", "transactional.id": "t"}, []string{"cluster us-east: transactional.id: requires idempotence"}},
		{"bad compression", map[string]string{"bootstrap.servers": "a:1", "compression.type": "brotli"}, []string{`compression.type: "brotli" is not none, gzip, snappy, lz4 or zstd`}},
		{"bad number", map[string]string{"bootstrap.servers": "a:1", "linger.ms": "5s"}, []string{`cluster us-east: linger.ms: "5s" is not an integer`}},
		{"negative", map[string]string{"bootstrap.servers": "a:1", "fetch.max.wait.ms": "-5"}, []string{"fetch.max.wait.ms: -5 is outside [0, "}},
		{"bad bool", map[string]string{"bootstrap.servers": "a:1", "check.crcs": "yes"}, []string{`check.crcs: "yes" is not true or false`}},
		{"bad isolation", map[string]string{"bootstrap.servers": "a:1", "isolation.level": "serializable"}, []string{`isolation.level: "serializable" is not read_uncommitted or read_committed`}},
		{"bad reset", map[string]string{"bootstrap.servers": "a:1", "auto.offset.reset": "smallest"}, []string{`auto.offset.reset: "smallest" is not earliest, latest or none`}},
		{"too large", map[string]string{"bootstrap.servers": "a:1", "max.request.size": "2147483647"}, []string{"max.request.size: 2147483647 is outside [1, 1073741824]"}},
		{"several at once", map[string]string{"linger.ms": "x", "acks": "2"}, []string{
			"cluster us-east: bootstrap.servers: required", "cluster us-east: acks:", "cluster us-east: linger.ms:"}},
		{"sasl without password, jaas hidden", map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" passwd="` + pw + `";`},
			[]string{"cluster us-east: sasl.jaas.config: missing password option"}},
		{"broken jaas", map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="` + pw},
			[]string{"cluster us-east: sasl.jaas.config: invalid JAAS configuration: unterminated quoted value at byte"}},
		{"truststore missing", map[string]string{"bootstrap.servers": "a:1", "security.protocol": "SSL", "ssl.truststore.location": "/x", "ssl.truststore.password": pw},
			[]string{"cluster us-east: ssl.truststore.location: open /x: no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, warnings, err := Options("us-east", tt.props)
			if err == nil {
				t.Fatalf("no error; %d options, warnings %q", len(opts), warnings)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), pw) {
				t.Errorf("error leaks a password: %q", err)
			}
		})
	}
}
