package config

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// ownKeyDocs says what each of mirrorctl's own keys does, for the generated
// configuration reference (WriteReference); TestOwnKeysDocumented keeps it
// complete. docs/config-keys.md has the longer story.
var ownKeyDocs = map[string]string{
	KeyGroupID:             "the flow's consumer group on the source, through which its replicate processes share the partitions (default mirrorctl-<source>-<target>)",
	KeyProgressInterval:    "how often, in ms, acknowledged positions are written to the progress topic: what a crash can copy again",
	KeyReverseCheckpoints:  "also checkpoint the target's groups on the remote topics back to the source, for failback with the target down",
	KeyProvenanceHeader:    "stamp copies with the mirrorctl-origin header, so that a ring closed by another configuration stops where it closes",
	KeyTransactionInterval: "exactly-once: how often, in ms, each partition task commits its transaction",
	KeyTransactionProducersMax: "exactly-once: the most transactional producers (one per partition copying) a flow holds open at once in this process; " +
		"partitions beyond it take turns, each reopening its producer (and fencing its id again) when its turn comes",
	KeyInstanceID:       "this process's group.instance.id in its flows' groups (static membership; none for dynamic)",
	KeyStopBudget:       "how long, in ms, a replicate process takes at most to stop on SIGINT or SIGTERM",
	KeyAcknowledged:     "keys (as written, comma-separated) whose warnings are read and accepted: they are no longer printed",
	KeyUnreachableGrace: "how long, in ms, a cluster may not answer before /readyz turns 503",
	KeyMM2OffsetsTopic:  "the Connect offsets topic MM2 kept its source offsets in, read to take a flow over from MM2",
	KeyMM2Connector:     "the MirrorSourceConnector's name in those offsets",
	KeyMM2ConnectGroup:  "MM2's Connect worker group, looked at to refuse starting beside a running MM2",
	KeyResumeUnknown:    "what a partition with no known resume point does when its remote partition holds records",
	KeySourceRecreated:  "what a flow does with a source topic deleted and created again (a new topic ID)",
	KeySyncTopicACLsPrune: "delete the target topic ACL bindings that mirrorctl's ACL sync created (recorded in mirrorctl-acls.<source>.internal on the target) " +
		"whose source binding is gone; off, they are only reported (mirrorctl_acl_revoked_bindings, /status, log). MM2 never deletes ACLs",
}

// where says where a key is written, for the reference.
func (s scope) where() string {
	switch s {
	case scopeWorker:
		return "top level or `B.<key>` (B: the flow's target)"
	case scopeTop:
		return "top level only"
	}
	return "top level or `A->B.<key>`"
}

// status says whether and how mirrorctl acts on k, and the note that goes
// with it.
func status(k string) (string, string) {
	switch {
	case strings.HasPrefix(k, "mirrorctl."), k == KeySyncTopicACLsPrune:
		return "mirrorctl's own", ownKeyDocs[k]
	case k == "source.cluster.alias" || k == "target.cluster.alias":
		return "set from the flow", "MM2 sets it from each flow's aliases; a value written is ignored"
	}
	if n, ok := notActedOnKeys[k]; ok {
		if n.actsOn != nil {
			return "not acted on (some values)", n.instead
		}
		return "not acted on", n.instead
	}
	if d, ok := differsKeys[k]; ok {
		return "acted on, differs", strings.TrimPrefix(d, "read differently from MM2: ")
	}
	if knownKeys[k].kind == kClass {
		if k == "replication.policy.class" {
			return "acted on (two classes)", "DefaultReplicationPolicy or IdentityReplicationPolicy; another class is refused"
		}
		return "acted on (the default class)", "another class is warned about and not loaded"
	}
	return "acted on", ""
}

// WriteReference writes the configuration reference: every key of the
// code's key table (knownKeys), sorted, with where it is written, its type,
// its default (MM2's unless the key is mirrorctl's own), whether mirrorctl
// acts on it and a note, as one Markdown table. `make docs` writes it to
// docs/config-reference.md and CI fails when the committed file differs.
// Client keys (A.consumer.*, ssl.*, sasl.*) are passed to the clients and
// documented in docs/config-keys.md.
func WriteReference(w io.Writer) error {
	keys := make([]string, 0, len(knownKeys))
	for k := range knownKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Configuration reference\n\n" +
		"Generated from mirrorctl's key table (`internal/config`) by `make docs`; do not edit.\n" +
		"Every key of `mm2.properties` mirrorctl reads, besides the client keys\n" +
		"(`A.bootstrap.servers`, `A.consumer.*`, `ssl.*`, `sasl.*`, ...). Where a key is\n" +
		"MM2's, the default is MM2's (Kafka 4), and mirrorctl's when they differ is\n" +
		"said in the note. [config-keys.md](config-keys.md) tells the longer story.\n\n" +
		"| key | written | type | default | status | note |\n|---|---|---|---|---|---|\n")
	for _, k := range keys {
		ki := knownKeys[k]
		st, note := status(k)
		def := ki.def
		typ := ki.typeName()
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", k, ki.scope.where(), typ, codeCell(def), st, textCell(note))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// typeName is the key's type as the reference shows it.
func (ki keyInfo) typeName() string {
	switch ki.kind {
	case kInt:
		if ki.hasMin {
			return fmt.Sprintf("int (≥ %d)", ki.min)
		}
		return "int"
	case kBool:
		return "bool"
	case kEnum:
		return strings.Join(ki.enum, " \\| ")
	case kList:
		return "regex list"
	case kClass:
		return "class"
	}
	return "string"
}

// codeCell is a value as a code span in a Markdown table cell; "—" for
// none.
func codeCell(s string) string {
	if s == "" {
		return "—"
	}
	return "`" + strings.ReplaceAll(s, "|", "\\|") + "`"
}

// textCell escapes prose for a Markdown table cell.
func textCell(s string) string {
	return strings.NewReplacer("|", "\\|", "<", "&lt;", ">", "&gt;", "*", "\\*", "_", "\\_").Replace(s)
}
