package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/mirrorctl/mirrorctl/replicate/clientrole"
)

// ErrClosed is returned by Factory.Client and Factory.Admin after Close.
var ErrClosed = errors.New("kafka: client factory is closed")

// Factory is the one place that builds franz-go clients for mirrorctl. It
// turns a cluster alias and role into properties through the lookup given to
// NewFactory, maps them with Options, and keeps every client it built so that
// Close can close them all. It is safe for concurrent use.
type Factory struct {
	props  func(alias string, role clientrole.Role) (map[string]string, error)
	logger *slog.Logger

	mu      sync.Mutex
	closed  bool
	clients map[*kgo.Client]struct{}
	warned  map[string]bool // "alias/role" whose warnings were logged

	adminMu sync.Mutex // serialises Admin so each alias is built once
	admins  map[string]adminEntry
}

type adminEntry struct {
	adm *kadm.Client
	cl  *kgo.Client
}

// NewFactory returns a Factory. props returns the resolved Java client
// properties of a cluster alias for a role ("consumer", "producer" or
// "admin"); its values may hold secrets and are never logged. logger receives
// the factory's own messages (property warnings at Warn, once per alias and
// role) and franz-go's, demoted by four slog levels (franz-go Info logs at
// Debug); nil discards everything.
func NewFactory(props func(alias string, role clientrole.Role) (map[string]string, error), logger *slog.Logger) *Factory {
	if logger == nil {
		logger = discardLogger()
	}
	return &Factory{
		props:   props,
		logger:  logger,
		clients: map[*kgo.Client]struct{}{},
		warned:  map[string]bool{},
		admins:  map[string]adminEntry{},
	}
}

// Client builds a new kgo client for alias in role. extra options are applied
// after the mapped ones, so they override them (e.g. kgo.ConsumeTopics,
// kgo.ConsumerGroup). Each call returns a new client that does not connect
// until first used; the caller closes it, or Close does.
//
// Errors: ErrClosed after Close; an unknown role; the props lookup's error;
// Options' errors ("cluster <alias>: <key>: ..."); kgo.NewClient's
// validation errors, prefixed with the cluster and role.
func (f *Factory) Client(alias string, role clientrole.Role, extra ...kgo.Opt) (*kgo.Client, error) {
	switch role {
	case clientrole.Consumer, clientrole.Producer, clientrole.Admin:
	default:
		return nil, fmt.Errorf("cluster %s: unknown client role %q; want consumer, producer or admin", alias, role)
	}
	if f.isClosed() {
		return nil, ErrClosed
	}
	props, err := f.props(alias, role)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %s properties: %w", alias, role, err)
	}
	opts, warnings, err := Options(alias, props)
	if err != nil {
		return nil, err
	}
	f.logWarnings(alias, role, warnings)

	kl := slog.New(demoteHandler{f.logger.Handler()}).With("cluster", alias, "role", role)
	opts = append(opts, kgo.WithLogger(kslog.New(kl)), kgo.WithHooks(closeHook{f}))
	opts = append(opts, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %s client: %w", alias, role, err)
	}

	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		cl.Close()
		return nil, ErrClosed
	}
	f.clients[cl] = struct{}{}
	f.mu.Unlock()
	f.logger.Debug("kafka client created", "cluster", alias, "role", role)
	return cl, nil
}

// Admin returns the kadm admin client for alias, built once from the "admin"
// properties and shared by every caller. It is owned by the factory: do not
// Close it (kadm.Client.Close closes the wrapped kgo client); Close on the
// factory does. If it is closed anyway, the next call builds a new one.
func (f *Factory) Admin(alias string) (*kadm.Client, error) {
	f.adminMu.Lock()
	defer f.adminMu.Unlock()
	f.mu.Lock()
	e, ok := f.admins[alias]
	f.mu.Unlock()
	if ok {
		return e.adm, nil
	}
	cl, err := f.Client(alias, clientrole.Admin)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	f.mu.Lock()
	f.admins[alias] = adminEntry{adm: adm, cl: cl}
	f.mu.Unlock()
	return adm, nil
}

// Close closes every client the factory built that is still open, admin
// clients included, and makes later Client and Admin calls fail with
// ErrClosed. It may be called more than once.
func (f *Factory) Close() {
	f.mu.Lock()
	f.closed = true
	open := make([]*kgo.Client, 0, len(f.clients))
	for cl := range f.clients {
		open = append(open, cl)
	}
	f.mu.Unlock()
	// At once: each Close waits for its client's connections and
	// goroutines to end, and a run holds a dozen clients.
	var wg sync.WaitGroup
	for _, cl := range open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.Close()
		}()
	}
	wg.Wait()
}

func (f *Factory) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// logWarnings logs the property warnings for alias and role the first time only.
func (f *Factory) logWarnings(alias string, role clientrole.Role, warnings []string) {
	// Once per cluster and property, whatever the role: the same
	// top-level key reaches every role's client.
	for _, w := range warnings {
		k := alias + "/" + w
		f.mu.Lock()
		seen := f.warned[k]
		f.warned[k] = true
		f.mu.Unlock()
		if seen {
			continue
		}
		key, why, _ := strings.Cut(w, ": ")
		f.logger.Warn(fmt.Sprintf("cluster %s: client property %s not applied (%s client): %s (`mirrorctl config validate` lists these with file:line)", alias, key, role, why))
	}
}

// forget drops a closed client from the factory's books.
func (f *Factory) forget(cl *kgo.Client) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clients, cl)
	for alias, e := range f.admins {
		if e.cl == cl {
			delete(f.admins, alias)
		}
	}
}

// closeHook tells the factory when one of its clients is closed, by the
// caller or by Factory.Close.
type closeHook struct{ f *Factory }

// OnClientClosed implements kgo.HookClientClosed.
func (h closeHook) OnClientClosed(cl *kgo.Client) { h.f.forget(cl) }
