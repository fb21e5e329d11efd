package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/cache"
	"github.com/agenthost/agenthost/host/queue"
)

// workerFlags are the flags of `worker`.
type workerFlags struct {
	nats, auth  string
	concurrency int
}

func workerCommand() command {
	return command{
		name: "worker", serves: true, usage: "worker --nats URL [--auth FILE] [--concurrency N]",
		summary: "run tool calls that agenthost serve --nats puts on the NATS JetStream queue, with this machine's toolpacks",
		flags: func(fs *flag.FlagSet, e *env) {
			w := &e.worker
			fs.StringVar(&w.nats, "nats", "", "the NATS server `URL` (with JetStream)")
			fs.StringVar(&w.auth, "auth", "", "the auth `FILE` of serve: its tenants (and their policies) are the ones this worker serves; without it the tenant default")
			fs.IntVar(&w.concurrency, "concurrency", queue.DefaultConcurrency, "calls run at once")
		},
		run: runWorker,
	}
}

func runWorker(ctx context.Context, e *env, args []string) error {
	w := e.worker
	if len(args) != 0 || w.nats == "" {
		return usageError{"worker takes --nats URL and no arguments"}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root, err := cache.Resolve(e.cacheDir)
	if err != nil {
		return usageError{err.Error()}
	}
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
	nc, err := nats.Connect(w.nats, nats.Name("agenthost worker"))
	if err != nil {
		return usageError{"--nats: " + err.Error()}
	}
	defer nc.Close()
	name, _ := os.Hostname()
	name = fmt.Sprintf("%s-%d", name, os.Getpid())
	wk, err := queue.NewWorker(ctx, nc, name, byTenant, queue.Options{Concurrency: w.concurrency, Logger: e.log.Named("worker")})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.messages(), "agenthost: worker %s serving %d tenant(s) from %s\n", name, len(byTenant), w.nats)
	return wk.Run(ctx)
}
