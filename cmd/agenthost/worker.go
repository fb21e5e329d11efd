package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/cache"
	"github.com/agenthost/agenthost/host/jobs/natsexec"
)

// workerFlags are the flags of `worker`.
type workerFlags struct {
	nats          natsFlags
	auth, metrics string
	concurrency   int
	drain         time.Duration
}

func workerCommand() command {
	return command{
		name: "worker", serves: true, usage: "worker --nats URL --nats-key-file FILE [--nats-nkey FILE] [--auth FILE] [--concurrency N] [--drain-timeout D]",
		summary: "run tool calls that agenthost serve --nats puts on the NATS JetStream queue, with this machine's toolpacks",
		flags: func(fs *flag.FlagSet, e *env) {
			w := &e.worker
			w.nats.register(fs, "the NATS server `URL` (with JetStream) of serve --nats")
			fs.StringVar(&w.auth, "auth", "", "the auth `FILE` of serve: its tenants (and their policies) are the ones this worker serves; without it the tenant default")
			fs.IntVar(&w.concurrency, "concurrency", natsexec.DefaultConcurrency, "calls run at once")
			fs.DurationVar(&w.drain, "drain-timeout", natsexec.DefaultDrainTimeout, "on SIGTERM or SIGINT, how long the calls running may go on to finish (no new call is taken); past it they are cancelled and answer MAY_HAVE_RUN")
			fs.StringVar(&w.metrics, "metrics", "", "serve Prometheus metrics at http://`HOST:PORT`/metrics (agenthost_queue_rejected_total: forged, unsigned, expired and replayed messages dropped)")
		},
		run: runWorker,
	}
}

func runWorker(ctx context.Context, e *env, args []string) error {
	w := e.worker
	if len(args) != 0 || w.nats.url == "" {
		return usageError{"worker takes --nats URL and no arguments"}
	}
	if w.drain <= 0 {
		return usageError{"--drain-timeout must be above 0"}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root, err := cache.Resolve(e.cacheDir)
	if err != nil {
		return usageError{err.Error()}
	}
	// The queue first: a refused server or a missing key is said before
	// the toolpacks load.
	nc, key, err := w.nats.connect(ctx, e, "worker")
	if err != nil {
		return err
	}
	defer nc.Close()
	tenants, hosts, _, err := e.buildTenants(ctx, root, w.auth, nil)
	defer func() {
		for _, h := range hosts {
			h.Close(context.Background())
		}
	}()
	if err != nil {
		return err
	}
	byTenant := map[string]*host.Host{}
	for name, t := range tenants {
		byTenant[name] = t.Host
	}
	name, _ := os.Hostname()
	name = fmt.Sprintf("%s-%d", name, os.Getpid())
	wk, err := natsexec.NewWorker(ctx, nc, name, byTenant, natsexec.Options{Key: key, Concurrency: w.concurrency, DrainTimeout: w.drain, Logger: e.log.Named("worker")})
	if err != nil {
		return err
	}
	msg := e.messages()
	if w.metrics != "" {
		ln, err := net.Listen("tcp", w.metrics)
		if err != nil {
			return usageError{"--metrics: " + err.Error()}
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(wk, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				e.log.Named("worker").Error("metrics", "error", err)
			}
		}()
		defer srv.Close()
		fmt.Fprintf(msg, "agenthost: worker metrics on http://%s/metrics\n", ln.Addr())
	}
	fmt.Fprintf(msg, "agenthost: worker %s serving %d tenant(s) from %s\n", name, len(byTenant), natsexec.RedactURL(w.nats.url))
	ran := make(chan struct{})
	defer close(ran)
	go func() {
		select {
		case <-ctx.Done():
			fmt.Fprintf(msg, "agenthost: worker draining (up to %s)\n", w.drain)
		case <-ran:
		}
	}()
	return wk.Run(ctx)
}
