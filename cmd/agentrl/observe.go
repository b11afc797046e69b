package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/cudaprom"
	"github.com/agentrl/agentrl/router"
	"github.com/agentrl/agentrl/router/routerprom"
	"github.com/agentrl/agentrl/server/httpapi"
)

// newLogger returns the slog logger --log-format asks for.
func newLogger(format string, w io.Writer) (*slog.Logger, error) {
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, got %q", format)
}

// engineCollectors returns the Prometheus collectors for what srv is: a
// router's per-server counters, an in-process engine's statistics.
func engineCollectors(srv any) []prometheus.Collector {
	var cs []prometheus.Collector
	if r, ok := srv.(interface{ Snapshot() router.Snapshot }); ok {
		cs = append(cs, routerprom.New(r, routerprom.Options{}))
	}
	if e, ok := srv.(interface{ Stats() cuda.Stats }); ok {
		cs = append(cs, cudaprom.New(e, cudaprom.Options{}))
	}
	return cs
}

// metricsServer serves /metrics for a registry of cs (plus the Go runtime
// and process collectors) on addr until stop.
type metricsServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// metricsHandler serves a registry of cs plus the Go runtime and process
// collectors in Prometheus' text format.
func metricsHandler(log *slog.Logger, cs ...prometheus.Collector) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}), nil
}

func startMetrics(addr string, log *slog.Logger, access httpapi.Config, cs ...prometheus.Collector) (*metricsServer, error) {
	h, err := metricsHandler(log, cs...)
	if err != nil {
		return nil, err
	}
	return serveMetrics(addr, log, h, access)
}

// serveMetrics serves h at /metrics on a listener of its own, behind the
// API server's checks (httpapi.Guard) with access's auth token, allowed
// hosts and origins: without a token, a Host that is not an IP address,
// localhost or an allowed host is refused, so a DNS-rebinding page cannot
// read the metrics.
func serveMetrics(addr string, log *slog.Logger, h http.Handler, access httpapi.Config) (*metricsServer, error) {
	guarded, err := httpapi.Guard(h, access)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", guarded)
	m := &metricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)},
		ln:   ln,
		done: make(chan error, 1),
	}
	go func() { m.done <- m.srv.Serve(ln) }()
	log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return m, nil
}

// Addr is the address the server listens on.
func (m *metricsServer) Addr() string { return m.ln.Addr().String() }

// stop shuts the server down, letting a scrape in progress finish.
func (m *metricsServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if serr := <-m.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
