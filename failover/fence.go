package failover

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// FenceOptions configure [Engine.Fence].
type FenceOptions struct {
	// Principals are the application principals denied WRITE on the
	// topics ("User:orders-app"). Kafka's authorizer gives DENY precedence
	// over ALLOW, so "all but the mirror's" cannot be written as one
	// binding: name the producers.
	Principals []string
	// Settle is how long the source end offsets must stay unchanged for
	// the fence to count as holding; default 2s.
	Settle time.Duration
	// Timeout bounds the wait for the end offsets to settle; default 1m.
	Timeout time.Duration
}

// Fence is a write fence in place on the source cluster.
type Fence struct {
	Cluster    string   `json:"cluster"`
	Principals []string `json:"principals"`
	Topics     []string `json:"topics"`
	// Bindings are the DENY WRITE bindings created, as kafka-acls would
	// print them.
	Bindings []string `json:"bindings"`
	// SettledAt is when the source end offsets were last seen to move
	// (or the fence's creation when they never did); SettledMs how long
	// the wait for them to stop took.
	SettledAt time.Time `json:"settled_at"`
	SettledMs int64     `json:"settled_ms"`
	// Ends are the settled end offsets (topic -> partition -> offset).
	Ends map[string]map[int32]int64 `json:"end_offsets"`
}

// FenceTopics lists the source topics of plan's groups (what a write fence
// must cover), sorted.
func FenceTopics(plan *Plan) []string {
	set := map[string]bool{}
	for _, g := range plan.Groups {
		for _, pp := range g.Partitions {
			if pp.SourceTopic != "" {
				set[pp.SourceTopic] = true
			}
		}
	}
	return keys(set)
}

func fenceACLs(topics, principals []string) *kadm.ACLBuilder {
	return kadm.NewACLs().Topics(topics...).ResourcePatternType(kadm.ACLPatternLiteral).
		Deny(principals...).DenyHosts("*").Operations(kadm.OpWrite)
}

// Fence stops the application producers from writing to the source
// topics, for a planned failover with nothing left behind: it creates DENY
// WRITE bindings (LITERAL, host *) for each principal on each topic
// (CreateACLs; the source needs an authorizer), then waits until the
// topics' end offsets stay unchanged for Settle, so that every record
// written before the fence is in the log for the mirror to copy. A fence
// that cannot be created is an error and nothing is left half-made; end
// offsets still moving at Timeout (a principal not fenced) is an error
// with the fence left in place (see [Engine.Unfence]) and the Fence
// returned.
func (e *Engine) Fence(ctx context.Context, topics []string, opts FenceOptions) (*Fence, error) {
	if len(opts.Principals) == 0 {
		return nil, fmt.Errorf("fence: no principal to fence")
	}
	if len(topics) == 0 {
		return nil, fmt.Errorf("fence: no source topic to fence")
	}
	if opts.Settle <= 0 {
		opts.Settle = 2 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	adm, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return nil, err
	}
	f := &Fence{Cluster: e.flow.Source, Principals: slices.Sorted(slices.Values(opts.Principals)), Topics: topics}
	for _, p := range f.Principals {
		for _, t := range topics {
			f.Bindings = append(f.Bindings, fmt.Sprintf("%s DENY WRITE on TOPIC:LITERAL:%s from host *", p, t))
		}
	}
	res, err := adm.CreateACLs(ctx, fenceACLs(topics, opts.Principals))
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = fmt.Errorf("%s on %s: %w", r.Principal, r.Name, r.Err)
				break
			}
		}
	}
	if err != nil {
		_ = e.Unfence(context.WithoutCancel(ctx), topics, opts.Principals)
		return nil, fmt.Errorf("fence on %s: %w (no fence is left in place)", e.flow.Source, err)
	}
	start := time.Now()
	settledAt, ends, err := awaitQuiet(ctx, adm, e.flow.Source, topics, opts.Settle, opts.Timeout)
	if err != nil {
		return f, fmt.Errorf("fence: %w: a producer not fenced? the fence is in place", err)
	}
	f.SettledAt, f.SettledMs, f.Ends = settledAt, time.Since(start).Milliseconds(), ends
	return f, nil
}

// Unfence deletes the DENY WRITE bindings [Engine.Fence] creates for
// principals on topics of the source cluster (DeleteACLs with exactly that
// filter); other bindings are left alone. Deleting a fence that is not
// there is not an error.
func (e *Engine) Unfence(ctx context.Context, topics, principals []string) error {
	adm, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return err
	}
	res, err := adm.DeleteACLs(ctx, fenceACLs(topics, principals))
	if err != nil {
		return fmt.Errorf("unfence on %s: %w", e.flow.Source, err)
	}
	var errs []string
	for _, r := range res {
		if r.Err != nil {
			errs = append(errs, r.Err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("unfence on %s: %s", e.flow.Source, strings.Join(errs, "; "))
	}
	return nil
}

// FenceBinding is one DENY WRITE binding on a source topic, as
// [Engine.Fences] lists it.
type FenceBinding struct {
	Principal string `json:"principal"`
	Topic     string `json:"topic"`
	Pattern   string `json:"pattern"` // LITERAL or PREFIXED
	Host      string `json:"host"`
}

// Fences lists the DENY WRITE bindings on topics of the source cluster (all
// topics when none is named), of principals (any when none is named),
// sorted by topic and principal: the write fences in place, mirrorctl's or
// an operator's own. A source without an authorizer is an error
// (SECURITY_DISABLED).
func (e *Engine) Fences(ctx context.Context, topics, principals []string) ([]FenceBinding, error) {
	adm, err := e.clients.Admin(e.flow.Source)
	if err != nil {
		return nil, err
	}
	b := kadm.NewACLs().Topics(topics...).ResourcePatternType(kadm.ACLPatternAny).Deny(principals...).DenyHosts().Operations(kadm.OpWrite)
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("describe ACLs on %s: %w", e.flow.Source, err)
	}
	var out []FenceBinding
	for _, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("describe ACLs on %s: %w", e.flow.Source, r.Err)
		}
		for _, d := range r.Described {
			if d.Operation != kadm.OpWrite && d.Operation != kadm.OpAll {
				continue
			}
			out = append(out, FenceBinding{Principal: d.Principal, Topic: d.Name, Pattern: d.Pattern.String(), Host: d.Host})
		}
	}
	slices.SortFunc(out, func(a, b FenceBinding) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return strings.Compare(a.Principal, b.Principal)
	})
	return slices.CompactFunc(out, func(a, b FenceBinding) bool { return a == b }), nil
}
