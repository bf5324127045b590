package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Handler returns the HTTP handler of the metrics endpoint:
//
//	GET /metrics  Prometheus text exposition: o's series plus go_* and process_* collectors
//	GET /healthz  200 "ok" while the process runs
//	GET /readyz   200 "ready" when every flow is up, no cluster has been unreachable for longer than the grace and no partition is stopped (see [Observer.Ready]), else 503 "not ready: <reasons>" ([Observer.NotReady], joined by "; ": the flow down, the cluster alias unreachable since when, the stopped partitions)
//	GET /status   [Status] as JSON
//
// It returns an error if the standard collectors cannot be registered
// (never in practice).
func Handler(o *Observer) (http.Handler, error) {
	// The Observer's series are written by metricsHandler itself
	// (exposition.go); the registry holds the standard collectors.
	std := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := std.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register collector: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(o, std))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if why := o.NotReady(); len(why) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + strings.Join(why, "; ") + "\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(o.Status())
	})
	return mux, nil
}

// Server serves [Handler] on a TCP address.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen binds addr (host:port, e.g. ":9464"; port 0 picks a free one) and
// starts serving o in the background. The error names the address when it
// cannot be bound.
func Listen(addr string, o *Observer) (*Server, error) {
	h, err := Handler(o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr returns the bound address, e.g. "[::]:9464".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting in-flight scrapes finish until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics server %s: %w", s.Addr(), err)
	}
	return nil
}
