package cli

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/cli/aclplan"
	auditshow "github.com/mirrorctl/mirrorctl/internal/cli/auditcmd/show"
	auditverify "github.com/mirrorctl/mirrorctl/internal/cli/auditcmd/verify"
	configshow "github.com/mirrorctl/mirrorctl/internal/cli/configcmd/show"
	configvalidate "github.com/mirrorctl/mirrorctl/internal/cli/configcmd/validate"
	"github.com/mirrorctl/mirrorctl/internal/cli/contextcmd"
	"github.com/mirrorctl/mirrorctl/internal/cli/demo"
	"github.com/mirrorctl/mirrorctl/internal/cli/dump"
	clifailover "github.com/mirrorctl/mirrorctl/internal/cli/failover"
	"github.com/mirrorctl/mirrorctl/internal/cli/lag"
	"github.com/mirrorctl/mirrorctl/internal/cli/mm2"
	clireplicate "github.com/mirrorctl/mirrorctl/internal/cli/replicate"
	clistatus "github.com/mirrorctl/mirrorctl/internal/cli/status"
	"github.com/mirrorctl/mirrorctl/internal/cli/translate"
	"github.com/mirrorctl/mirrorctl/internal/cli/version"
	"github.com/mirrorctl/mirrorctl/internal/metrics"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// jsonDoc is one JSON document mirrorctl writes: the commands (and flags)
// that write it and its Go type, whose exported fields and json tags are
// the document's fields.
type jsonDoc struct {
	anchor, title, where string
	typ                  reflect.Type
	// elems gives, by field path, the element types of a list declared
	// as []any: their fields are listed under it, each path once.
	elems map[string][]reflect.Type
}

// failoverRows are the element types of a failover group's partitions.
var failoverRows = []reflect.Type{reflect.TypeFor[clifailover.ForwardRow](), reflect.TypeFor[clifailover.BackRow]()}

// jsonDocs lists every JSON document, in the order docs/json-fields.md
// shows them. A command's -o json result type added here is documented by
// `make docs`; one left out is not (TestJSONReferenceCoversResults).
var jsonDocs = []jsonDoc{
	{"replicate-dry-run", "replicate --dry-run", "`mirrorctl replicate --dry-run -o json`", reflect.TypeFor[clireplicate.PlanResult](), nil},
	{"replicate-once", "replicate --once", "`mirrorctl replicate --once -o json` (and a continuous run's last document when it stops)", reflect.TypeFor[clireplicate.RunResult](), nil},
	{"lag", "lag", "`mirrorctl lag -o json`; with `--watch`, one such object per line (JSON Lines) per refresh", reflect.TypeFor[lag.Result](), nil},
	{"status", "status", "`mirrorctl status -o json`", reflect.TypeFor[clistatus.Result](), nil},
	{"translate", "translate", "`mirrorctl translate -o json`", reflect.TypeFor[translate.Result](), nil},
	{"checkpoints-dump", "checkpoints dump", "`mirrorctl checkpoints dump -o json`", reflect.TypeFor[dump.CheckpointsResult](), nil},
	{"offset-syncs-dump", "offset-syncs dump", "`mirrorctl offset-syncs dump -o json`", reflect.TypeFor[dump.OffsetSyncsResult](), nil},
	{"heartbeats-dump", "heartbeats dump", "`mirrorctl heartbeats dump -o json`", reflect.TypeFor[dump.HeartbeatsResult](), nil},
	{"failover", "failover plan, apply, verify, drill", "`mirrorctl failover plan|apply|verify|drill --type <type> -o json`", reflect.TypeFor[clifailover.VerbResult](), map[string][]reflect.Type{"plans[].groups[].partitions": failoverRows}},
	{"failover-evidence", "failover evidence file", "`failover-<type>-<time>.json` in `--evidence-dir`, written by `failover apply` and `drill`", reflect.TypeFor[failover.Evidence](), nil},
	{"failover-saved-plan", "failover saved plan", "the file `failover plan --plan-out <file>` writes and `failover apply --from-plan` reads", reflect.TypeFor[failover.SavedPlan](), nil},
	{"failover-old", "failover (old spellings)", "`mirrorctl failover --apply|--verify -o json`, `mirrorctl failback -o json` (deprecated)", reflect.TypeFor[clifailover.Result](), map[string][]reflect.Type{"groups[].partitions": failoverRows}},
	{"fence", "fence add, remove, status", "`mirrorctl fence add|remove|status -o json`", reflect.TypeFor[clifailover.FenceResult](), nil},
	{"acl-plan", "acl-plan", "`mirrorctl acl-plan -o json` (or `--format json`)", reflect.TypeFor[aclplan.PlanResult](), nil},
	{"acl-plan-diff", "acl-plan --diff", "`mirrorctl acl-plan --diff -o json`", reflect.TypeFor[aclplan.DiffResult](), nil},
	{"acl-plan-apply", "acl-plan --apply", "`mirrorctl acl-plan --apply -o json`", reflect.TypeFor[aclplan.ApplyResult](), nil},
	{"mm2-handoff", "mm2 handoff", "`mirrorctl mm2 handoff -o json`", reflect.TypeFor[mm2.HandoffResult](), nil},
	{"audit-show", "audit show", "`mirrorctl audit show -o json`", reflect.TypeFor[auditshow.Result](), nil},
	{"audit-verify", "audit verify", "`mirrorctl audit verify -o json`", reflect.TypeFor[auditverify.Result](), nil},
	{"config-validate", "config validate", "`mirrorctl config validate -o json`", reflect.TypeFor[configvalidate.Result](), nil},
	{"config-show", "config show", "`mirrorctl config show -o json`", reflect.TypeFor[configshow.Result](), nil},
	{"context-list", "context list", "`mirrorctl context list -o json`", reflect.TypeFor[contextcmd.ListResult](), nil},
	{"context-show", "context show", "`mirrorctl context show -o json`", reflect.TypeFor[contextcmd.ShowResult](), nil},
	{"demo", "demo", "`mirrorctl demo -o json`", reflect.TypeFor[demo.Result](), nil},
	{"version", "version", "`mirrorctl version -o json`", reflect.TypeFor[version.Info](), nil},
	{"status-endpoint", "/status", "`GET /status` of `replicate --metrics-addr`", reflect.TypeFor[metrics.Status](), nil},
	{"error", "error object", "the last line on stderr of any command run with `-o json` that fails", reflect.TypeFor[output.ErrorDocument](), nil},
}

// GenerateJSONReference writes docs/json-fields.md to path: for every JSON
// document of jsonDocs, each field's path (a.b[].c), its JSON type and
// whether it is left out when empty (omitempty), read by reflection from the
// document's Go type with encoding/json's rules (embedded structs without a
// tag are flattened, "-" fields are skipped). Types with their own
// MarshalJSON or MarshalText are shown as such. Errors are the file write's.
func GenerateJSONReference(path string) error {
	var b strings.Builder
	b.WriteString("# JSON fields\n\n" +
		"Generated from the result types of the commands (`internal/cli`) by `make docs`; do not edit.\n" +
		"Every field of every JSON document mirrorctl writes, by path (`flows[].topic` is the\n" +
		"`topic` of each element of `flows`). \"omitted when empty\" fields (Go's omitempty)\n" +
		"are left out when empty, zero or false. Times are RFC 3339 strings. What a field means\n" +
		"is said in each command's help ([commands/](commands/README.md)) and in the\n" +
		"[scripting page](scripting.md), which also states the compatibility policy:\n" +
		"`schema_version` is 1, and new fields may appear in any release.\n\n")
	for _, d := range jsonDocs {
		fmt.Fprintf(&b, "<a id=\"%s\"></a>\n## %s\n\n%s\n\n| field | type | omitted when empty |\n|---|---|---|\n", d.anchor, d.title, d.where)
		w := &jsonWalker{elems: d.elems, seen: map[reflect.Type]bool{}, listed: map[string]bool{}}
		rows := w.fields(d.typ, "")
		for _, r := range rows {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.path, r.kind, r.omit)
		}
		b.WriteString("\n")
	}
	return os.WriteFile(path, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644)
}

// jsonField is one row of the JSON reference.
type jsonField struct{ path, kind, omit string }

var (
	timeType      = reflect.TypeFor[time.Time]()
	durationType  = reflect.TypeFor[time.Duration]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// jsonWalker lists one document's fields.
type jsonWalker struct {
	elems  map[string][]reflect.Type // jsonDoc.elems
	seen   map[reflect.Type]bool     // the struct types on the current path, so a recursive type is listed once
	listed map[string]bool           // paths already listed (element types of one []any share fields)
}

// fields lists the fields of struct type t (through pointers) under
// prefix, depth first in declaration order.
func (w *jsonWalker) fields(t reflect.Type, prefix string) []jsonField {
	seen := w.seen
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, w.fields(f.Type, prefix)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := ""
		if strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,") {
			omit = "yes"
		}
		out = append(out, w.value(f.Type, prefix+name, omit)...)
	}
	return out
}

// value lists the row of one value of type t at path, then the fields
// under it (of a struct, of a list's or map's struct elements, or of the
// element types elems gives for the path).
func (w *jsonWalker) value(t reflect.Type, path, omit string) []jsonField {
	if w.listed[path] {
		return nil
	}
	w.listed[path] = true
	kind, elem, suffix := jsonKind(t)
	if t.Kind() == reflect.Pointer {
		kind += ", or null"
	}
	if ts, ok := w.elems[path]; ok {
		names := make([]string, len(ts))
		for i, et := range ts {
			names[i] = "`" + et.String() + "`"
		}
		kind = "list of object (" + strings.Join(names, " or ") + ")"
		out := []jsonField{{path, kind, omit}}
		for _, et := range ts {
			out = append(out, w.fields(et, path+"[].")...)
		}
		return out
	}
	out := []jsonField{{path, kind, omit}}
	if elem != nil {
		out = append(out, w.fields(elem, path+suffix)...)
	}
	return out
}

// jsonKind names t's JSON type, and returns the struct type whose fields
// go under it with the path suffix that leads there ("." for an object,
// "[]." for a list's elements, ".*." for a map's values), or nil.
func jsonKind(t reflect.Type) (kind string, elem reflect.Type, suffix string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "time (RFC 3339 string)", nil, ""
	case t == durationType:
		return "integer (nanoseconds)", nil, ""
	case t == rawType:
		return "any JSON", nil, ""
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		return "custom (`" + t.String() + "`)", nil, ""
	case t.Implements(textType) || reflect.PointerTo(t).Implements(textType):
		return "string", nil, ""
	}
	switch t.Kind() {
	case reflect.String:
		return "string", nil, ""
	case reflect.Bool:
		return "boolean", nil, ""
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer", nil, ""
	case reflect.Float32, reflect.Float64:
		return "number", nil, ""
	case reflect.Interface:
		return "any JSON", nil, ""
	case reflect.Struct:
		return "object", t, "."
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string (base64)", nil, ""
		}
		k, e, _ := jsonKind(t.Elem())
		return "list of " + k, e, "[]."
	case reflect.Map:
		k, e, _ := jsonKind(t.Elem())
		return "object of " + k + " by key", e, ".*."
	}
	return t.Kind().String(), nil, ""
}
