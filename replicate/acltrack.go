package replicate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// ACLLedger records which target ACL bindings mirrorctl itself created for
// a flow, so that a grant revoked on the source is found on the target and
// only mirrorctl's own bindings are ever pruned (sync.topic.acls.prune). A
// binding already on the target before the sync (an operator's, or MM2's)
// is never recorded. [NewACLLedger] keeps it in a compacted topic on the
// target.
type ACLLedger interface {
	// Load returns the bindings recorded for the flow, sorted.
	Load(ctx context.Context) ([]ACLBinding, error)
	// Record adds bindings the sync created.
	Record(ctx context.Context, bs []ACLBinding) error
	// Forget removes bindings (pruned, or gone from the target).
	Forget(ctx context.Context, bs []ACLBinding) error
}

// ACLLedgerTopic returns the name of the flow's ACL ledger topic on the
// target, "mirrorctl-acls.<source>.internal" under the default policy
// (internal to the policy, like the progress topic, so never mirrored).
func ACLLedgerTopic(p policy.Policy, source string) string {
	suffix := p.InternalSuffix()
	sep := suffix[:len(suffix)-len("internal")]
	return "mirrorctl-acls" + sep + source + suffix
}

// ledgerTimeout bounds one read of the ledger topic.
const ledgerTimeout = 30 * time.Second

// topicLedger is the [ACLLedger] in the topic [ACLLedgerTopic] on the flow's
// target: one record per binding, keyed by the flow and the binding (JSON),
// its value the creation time; a tombstone forgets it.
type topicLedger struct {
	cfg      FlowConfig
	clients  Clients
	topic    string
	readOnly bool // Record and Forget fail
}

// NewACLLedger returns the flow's ACL ledger in the compacted topic
// [ACLLedgerTopic] on cfg.Target, created by the first Record (one
// partition, cfg.ProgressReplicationFactor), so a flow whose sync never
// created a binding has none; a missing topic holds nothing. It needs
// CREATE, WRITE and READ on that topic. With readOnly (--dry-run) Record
// and Forget fail.
func NewACLLedger(cfg FlowConfig, clients Clients, readOnly bool) ACLLedger {
	return &topicLedger{cfg: cfg, clients: clients, topic: ACLLedgerTopic(cfg.Policy, cfg.Source), readOnly: readOnly}
}

// ledgerKey is a ledger record's key.
type ledgerKey struct {
	Flow         string                      `json:"flow"`
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	Pattern      kmsg.ACLResourcePatternType `json:"pattern_type"`
	Name         string                      `json:"name"`
	Principal    string                      `json:"principal"`
	Host         string                      `json:"host"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

func (l *topicLedger) key(b ACLBinding) []byte {
	k, _ := json.Marshal(ledgerKey{l.cfg.Name(), b.ResourceType, b.Pattern, b.Name, b.Principal, b.Host, b.Operation, b.Permission})
	return k
}

func (l *topicLedger) Load(ctx context.Context) ([]ACLBinding, error) {
	ctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	// A client of its own: a shared one may have cached the topic as
	// unknown from before Record created it.
	cl, err := l.clients.Client(l.cfg.Target, RoleAdmin)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, l.topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets of %s on %s: %w", l.topic, l.cfg.Target, err)
	}
	if errors.Is(starts.Error(), kerr.UnknownTopicOrPartition) {
		return []ACLBinding{}, nil // nothing recorded yet: Record creates the topic
	}
	ends, err := adm.ListEndOffsets(ctx, l.topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s on %s: %w", l.topic, l.cfg.Target, err)
	}
	s, sok := starts.Lookup(l.topic, 0)
	e, eok := ends.Lookup(l.topic, 0)
	if !sok || !eok {
		return nil, fmt.Errorf("offsets of %s on %s: %w", l.topic, l.cfg.Target, errors.Join(starts.Error(), ends.Error(), errors.New("no partition 0")))
	}
	if err := errors.Join(s.Err, e.Err); err != nil {
		return nil, fmt.Errorf("offsets of %s on %s: %w", l.topic, l.cfg.Target, err)
	}
	held := map[ACLBinding]bool{}
	if e.Offset > s.Offset {
		if err := l.read(ctx, s.Offset, e.Offset, held); err != nil {
			return nil, err
		}
	}
	out := make([]ACLBinding, 0, len(held))
	for b := range held {
		out = append(out, b)
	}
	sortBindings(out)
	return out, nil
}

// read applies the ledger's records from offset from up to end to held.
func (l *topicLedger) read(ctx context.Context, from, end int64, held map[ACLBinding]bool) error {
	cl, err := l.clients.Client(l.cfg.Target, RoleConsumer,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.topic: {0: kgo.NewOffset().At(from)}}))
	if err != nil {
		return err
	}
	defer cl.Close()
	for next := from; next < end; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s on %s: %w", l.topic, l.cfg.Target, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("read %s on %s: %w", l.topic, l.cfg.Target, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			var k ledgerKey
			if json.Unmarshal(r.Key, &k) != nil || k.Flow != l.cfg.Name() {
				return
			}
			b := ACLBinding{k.ResourceType, k.Pattern, k.Name, k.Principal, k.Host, k.Operation, k.Permission}
			held[b] = r.Value != nil
			if r.Value == nil {
				delete(held, b)
			}
		})
	}
	return nil
}

func (l *topicLedger) Record(ctx context.Context, bs []ACLBinding) error {
	v, _ := json.Marshal(map[string]int64{"created_ms": time.Now().UnixMilli()})
	return l.produce(ctx, bs, v)
}

func (l *topicLedger) Forget(ctx context.Context, bs []ACLBinding) error {
	return l.produce(ctx, bs, nil)
}

func (l *topicLedger) produce(ctx context.Context, bs []ACLBinding, value []byte) error {
	if len(bs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	if l.readOnly {
		return errors.New("the ACL ledger was opened read-only")
	}
	adm, err := l.clients.Admin(l.cfg.Target)
	if err != nil {
		return err
	}
	if err := ensureInternalTopic(ctx, adm, l.topic, l.cfg.ProgressReplicationFactor); err != nil {
		return err
	}
	cl, err := l.clients.Client(l.cfg.Target, RoleProducer, kgo.DefaultProduceTopic(l.topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer cl.Close()
	rs := make([]*kgo.Record, 0, len(bs))
	for _, b := range bs {
		rs = append(rs, &kgo.Record{Key: l.key(b), Value: value, Partition: 0})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("write %s on %s: %w", l.topic, l.cfg.Target, err)
	}
	return nil
}

// ACLSyncReport is one topic ACL sync's outcome ([SyncTopicACLs]); the
// JSON of --dry-run and /status. Lists are sorted.
type ACLSyncReport struct {
	Flow string `json:"flow"`
	// Planned is the target bindings the source's ACLs give (the MM2 rules
	// and mirrorctl's prefixed rule, [PlanTopicACLs]).
	Planned []ACLBinding `json:"planned"`
	// Created is the planned bindings that were not on the target and
	// that this sync created (all planned ones when untracked, as MM2).
	Created []ACLBinding `json:"created"`
	// Skipped is every source binding left out, with its reason.
	Skipped []ACLSkip `json:"skipped"`
	// Tracked is whether the target's ACLs and the ledger were read, so
	// that Revoked is known; TrackingError says why not.
	Tracked       bool   `json:"tracked"`
	TrackingError string `json:"tracking_error,omitempty"`
	// Revoked is the bindings mirrorctl created whose source binding is
	// gone (or no longer synced) and which are still on the target: a
	// grant the source no longer gives. Pruned ones are not in it.
	Revoked []ACLBinding `json:"revoked"`
	// Pruned is the revoked bindings this sync deleted
	// (sync.topic.acls.prune = true).
	Pruned []ACLBinding `json:"pruned"`
}

// nonNil returns r with empty lists rather than nil ones, so its JSON
// has [] for them.
func (r ACLSyncReport) nonNil() ACLSyncReport {
	for _, l := range []*[]ACLBinding{&r.Planned, &r.Created, &r.Revoked, &r.Pruned} {
		if *l == nil {
			*l = []ACLBinding{}
		}
	}
	if r.Skipped == nil {
		r.Skipped = []ACLSkip{}
	}
	return r
}

// FlowACLSync is a flow's topic ACL sync outcome: its report, or that the
// source has no authorizer, or why the sync could not read what it needs.
// It is the acl_sync JSON of `replicate --dry-run` (planned) and of a run
// (what the flow leader's last sync in this process did, [Mirror.ACLSyncs]).
type FlowACLSync struct {
	ACLSyncReport
	// NoAuthorizer is true when the source has no authorizer: there are
	// no ACLs to sync (MM2 skips the sync then too).
	NoAuthorizer bool   `json:"no_authorizer,omitempty"`
	Error        string `json:"error,omitempty"`
}

// NewFlowACLSync is the outcome of a sync (or plan) of flow that returned
// r and err.
func NewFlowACLSync(flow string, r ACLSyncReport, err error) FlowACLSync {
	r.Flow = flow
	out := FlowACLSync{ACLSyncReport: r.nonNil()}
	switch {
	case errors.Is(err, ErrNoAuthorizer):
		out.NoAuthorizer = true
	case err != nil:
		out.Error = err.Error()
	}
	return out
}

// ACLObserver is implemented by an [Observer] that reports topic ACL syncs
// (internal/metrics: mirrorctl_acl_revoked_bindings and /status); it gets
// every sync's report.
type ACLObserver interface {
	ACLSync(source, target string, r ACLSyncReport)
}

// aclSync is one sync's state.
type aclSync struct {
	dry      bool // PlanACLSync: read only
	cfg      FlowConfig
	tgt      *kadm.Client
	ledger   ACLLedger
	r        ACLSyncReport
	existing map[ACLBinding]bool
	recorded []ACLBinding
}

// SyncTopicACLs copies the source's topic ACLs to the target per
// [PlanTopicACLs], as MM2's periodic ACL sync does (sync.topic.acls.enabled,
// default true, every sync.topic.acls.interval.seconds, default 600 s), and
// tracks what it created in ledger. It reads the source with DescribeAcls
// (every resource type, so that skipped group and cluster bindings are
// reported) and ListTopics (DESCRIBE on the source CLUSTER), the target with
// DescribeAcls (DESCRIBE on the target CLUSTER), and writes with CreateAcls
// (ALTER on the target CLUSTER).
//
// With a ledger, only planned bindings absent from the target are created,
// and those are recorded; a recorded binding no longer planned and still on
// the target is Revoked, and with cfg.SyncTopicACLsPrune it is deleted
// (DeleteAcls of exactly that binding; ALTER on the target CLUSTER) and
// forgotten. A binding mirrorctl did not record is never deleted. With a
// nil ledger, or when the target's ACLs or the ledger cannot be read, every
// planned binding is created as MM2 does (additive), nothing is recorded
// or pruned, and the report says Tracked false with the reason.
//
// Errors: [ErrNoAuthorizer] when the source has no authorizer; the source's
// DescribeAcls or ListTopics failure; else the CreateAcls, ledger and
// DeleteAcls failures joined, each naming the binding. The report holds
// what was done either way.
func SyncTopicACLs(ctx context.Context, cfg FlowConfig, src, tgt *kadm.Client, ledger ACLLedger) (r ACLSyncReport, err error) {
	s := &aclSync{cfg: cfg, tgt: tgt, ledger: ledger, r: ACLSyncReport{Flow: cfg.Name()}}
	err = s.run(ctx, src)
	return s.r.nonNil(), err
}

// PlanACLSync is [SyncTopicACLs] without a write: Created lists what it
// would create, Pruned what it would prune (with cfg.SyncTopicACLsPrune)
// and Revoked the rest of the revoked bindings. It reads what the sync
// reads; a ledger topic not created yet holds nothing. For --dry-run.
func PlanACLSync(ctx context.Context, cfg FlowConfig, src, tgt *kadm.Client, ledger ACLLedger) (ACLSyncReport, error) {
	s := &aclSync{dry: true, cfg: cfg, tgt: tgt, ledger: ledger, r: ACLSyncReport{Flow: cfg.Name()}}
	err := s.run(ctx, src)
	return s.r.nonNil(), err
}

func (s *aclSync) run(ctx context.Context, src *kadm.Client) error {
	plan, err := PlanSourceACLs(ctx, s.cfg, src)
	if err != nil {
		return err
	}
	s.r.Planned, s.r.Skipped = plan.Bindings, plan.Skipped
	if err := s.readTarget(ctx); err != nil {
		s.r.TrackingError = err.Error()
		return s.create(ctx, plan.Bindings)
	}
	s.r.Tracked = true
	var toCreate []ACLBinding
	for _, b := range plan.Bindings {
		if !s.existing[b] {
			toCreate = append(toCreate, b)
		}
	}
	errs := []error{s.create(ctx, toCreate)}
	if !s.dry {
		if err := s.ledger.Record(ctx, s.r.Created); err != nil {
			errs = append(errs, fmt.Errorf("flow %s: record created ACLs (they will not be pruned): %w", s.cfg.Name(), err))
		}
	}
	errs = append(errs, s.revoked(ctx, plan.Bindings))
	return errors.Join(errs...)
}

// create creates bs (dry: lists them) into the report's Created.
func (s *aclSync) create(ctx context.Context, bs []ACLBinding) error {
	if s.dry {
		s.r.Created = bs
		return nil
	}
	created, err := createACLs(ctx, s.cfg, s.tgt, bs)
	s.r.Created = created
	return err
}

// PlanSourceACLs reads the source's ACL bindings (every resource type) and
// topic names and returns [PlanTopicACLs] of them; read-only, for
// --dry-run. Errors as [SyncTopicACLs]'s source errors.
func PlanSourceACLs(ctx context.Context, cfg FlowConfig, src *kadm.Client) (ACLPlan, error) {
	acls, err := describeACLs(ctx, src, kmsg.ACLResourceTypeAny)
	if err != nil {
		return ACLPlan{}, wrapDescribeSource(cfg, err)
	}
	td, err := src.ListTopicsWithInternal(ctx)
	if err != nil {
		return ACLPlan{}, fmt.Errorf("flow %s: list topics on %s: %w", cfg.Name(), cfg.Source, err)
	}
	return PlanTopicACLs(cfg, acls, td.Names()), nil
}

// readTarget reads the target's topic ACLs and the ledger.
func (s *aclSync) readTarget(ctx context.Context) error {
	if s.ledger == nil {
		return errors.New("no ACL ledger: created bindings are not tracked")
	}
	existing, err := describeACLs(ctx, s.tgt, kmsg.ACLResourceTypeTopic)
	if err != nil {
		return fmt.Errorf("describe ACLs on %s (needs DESCRIBE on its CLUSTER): %w", s.cfg.Target, err)
	}
	s.existing = map[ACLBinding]bool{}
	for _, b := range existing {
		s.existing[b] = true
	}
	if s.recorded, err = s.ledger.Load(ctx); err != nil {
		return fmt.Errorf("read the ACL ledger %s: %w", ACLLedgerTopic(s.cfg.Policy, s.cfg.Source), err)
	}
	return nil
}

// revoked finds the recorded bindings no longer planned: still on the
// target, they are revoked (pruned with cfg.SyncTopicACLsPrune); gone from
// it, they are forgotten.
func (s *aclSync) revoked(ctx context.Context, planned []ACLBinding) error {
	want := map[ACLBinding]bool{}
	for _, b := range planned {
		want[b] = true
	}
	var gone []ACLBinding
	var errs []error
	for _, b := range s.recorded {
		switch {
		case want[b]:
		case !s.existing[b]:
			gone = append(gone, b)
		case s.cfg.SyncTopicACLsPrune && s.dry:
			s.r.Pruned = append(s.r.Pruned, b)
		case s.cfg.SyncTopicACLsPrune:
			if err := deleteACL(ctx, s.cfg, s.tgt, b); err != nil {
				errs = append(errs, err)
				s.r.Revoked = append(s.r.Revoked, b)
				continue
			}
			s.r.Pruned = append(s.r.Pruned, b)
			gone = append(gone, b)
		default:
			s.r.Revoked = append(s.r.Revoked, b)
		}
	}
	if s.dry {
		return errors.Join(errs...)
	}
	if err := s.ledger.Forget(ctx, gone); err != nil {
		errs = append(errs, fmt.Errorf("flow %s: forget ACLs in the ledger: %w", s.cfg.Name(), err))
	}
	return errors.Join(errs...)
}
