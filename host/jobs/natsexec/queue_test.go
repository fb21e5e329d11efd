package natsexec_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/jobs/natsexec"
	"github.com/agenthost/agenthost/host/jobs/natsexec/queuetest"
)

// tools are the Go tools of the workers: one that blocks until released
// (counting its runs), non-idempotent and idempotent, one that says
// which worker ran it, and one that says as which tenant it ran
// (counting its runs by tenant).
type tools struct {
	release chan struct{}
	started chan string
	runs    atomic.Int32
	mu      sync.Mutex
	tenants map[string]int
}

func (tl *tools) build(worker, tenant string) []host.Tool {
	type none struct{}
	block := func(ctx context.Context, _ none) (map[string]string, error) {
		tl.runs.Add(1)
		tl.started <- worker
		select {
		case <-tl.release:
			return map[string]string{"worker": worker}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return []host.Tool{
		host.Func(host.FuncSpec{ID: "app:once", Description: "Blocks; not idempotent."}, block),
		host.Func(host.FuncSpec{ID: "app:again", Description: "Blocks; idempotent.", Idempotent: true}, block),
		host.Func(host.FuncSpec{ID: "app:who", Description: "Says which worker ran it."}, func(context.Context, none) (map[string]string, error) {
			return map[string]string{"worker": worker}, nil
		}),
		host.Func(host.FuncSpec{ID: "app:tenant", Description: "Says as which tenant it ran."}, func(_ context.Context, in struct {
			Secret string `json:"secret,omitempty"`
		}) (map[string]string, error) {
			tl.mu.Lock()
			if tl.tenants == nil {
				tl.tenants = map[string]int{}
			}
			tl.tenants[tenant]++
			tl.mu.Unlock()
			return map[string]string{"tenant": tenant, "secret": in.Secret}, nil
		}),
	}
}

// ranAs is how many times app:tenant ran as tenant.
func (tl *tools) ranAs(tenant string) int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.tenants[tenant]
}

// startWorker runs a worker with a host of its own for each tenant (acme
// and beta) until stop is called: then it dies, its connection closed
// before it is stopped, so that it answers nothing (TestWorkerDrain in
// cmd/agenthost stops a worker process that drains).
func startWorker(t *testing.T, ns *queuetest.Server, name string, tl *tools, o natsexec.Options) (w *natsexec.Worker, stop func()) {
	t.Helper()
	if o.DrainTimeout == 0 {
		// A dead worker's calls are cut at once.
		o.DrainTimeout = 100 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	hosts := map[string]*host.Host{}
	for _, tenant := range []string{"acme", "beta"} {
		h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Tools: tl.build(name, tenant)})
		if err != nil {
			t.Fatal(err)
		}
		hosts[tenant] = h
	}
	nc := ns.Connect(t, "worker")
	w, err := natsexec.NewWorker(ctx, nc, name, hosts, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			nc.Close()
			cancel()
			<-done
			for _, h := range hosts {
				h.Close(context.Background())
			}
		})
	}
	t.Cleanup(stop)
	return w, stop
}

// TestQueue runs calls through an embedded nats-server (the deploy
// example's configuration: TLS, nkeys, permissions) and two workers:
// every call answered, spread over both; each run as the tenant it was
// sent for; a tenant no worker serves answered LOAD_ERROR.
func TestQueue(t *testing.T) {
	ns := queuetest.Start(t)
	o := natsexec.Options{Key: queuetest.Key(t), AckWait: 1500 * time.Millisecond, Concurrency: 4}
	ctx := context.Background()
	d, err := natsexec.NewDispatcher(ctx, ns.Connect(t, "serve"), o)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{release: make(chan struct{}), started: make(chan string, 10)}
	startWorker(t, ns, "A", tl, o)
	startWorker(t, ns, "B", tl, o)
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]int{}
	for i := range 40 {
		wg.Go(func() {
			env, err := d.Call(ctx, "acme", "app:who", json.RawMessage(`{}`))
			if err != nil || env.Error != nil {
				t.Errorf("call %d: %v %+v", i, err, env.Error)
				return
			}
			var out map[string]string
			json.Unmarshal(env.Output, &out)
			mu.Lock()
			seen[out["worker"]]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if seen["A"]+seen["B"] != 40 || seen["A"] == 0 || seen["B"] == 0 {
		t.Errorf("calls per worker %v", seen)
	}
	if env, err := d.Call(ctx, "acme", "core:echo", json.RawMessage(`{"via":"nats"}`)); err != nil || string(env.Output) != `{"via":"nats"}` {
		t.Fatalf("echo: %v %+v", err, env)
	}
	for _, tenant := range []string{"acme", "beta"} {
		env, err := d.Call(ctx, tenant, "app:tenant", json.RawMessage(`{}`))
		if err != nil || env.Error != nil || !strings.Contains(string(env.Output), `"tenant":"`+tenant+`"`) {
			t.Fatalf("as %s: %v %+v", tenant, err, env)
		}
	}
	if env, err := d.Call(ctx, "gamma", "core:echo", nil); err != nil || env.Error == nil || env.Error.Code != "LOAD_ERROR" {
		t.Fatalf("a tenant no worker serves: %v %+v", err, env)
	}

	t.Log("spread", seen)
}

// TestWorkerDies kills the only worker while it runs a call; a second
// worker then gets the call again: it runs an idempotent tool again, and
// answers MAY_HAVE_RUN without running a tool that is not idempotent.
func TestWorkerDies(t *testing.T) {
	for _, tc := range []struct {
		tool string
		code string
		runs int32
	}{
		{"app:once", "MAY_HAVE_RUN", 1},
		{"app:again", "", 2},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			ns := queuetest.Start(t)
			o := natsexec.Options{Key: queuetest.Key(t), AckWait: time.Second, Concurrency: 2}
			ctx := context.Background()
			d, err := natsexec.NewDispatcher(ctx, ns.Connect(t, "serve"), o)
			if err != nil {
				t.Fatal(err)
			}
			tl := &tools{release: make(chan struct{}, 1), started: make(chan string, 4)}
			_, stopA := startWorker(t, ns, "A", tl, o)
			res := make(chan string, 1)
			go func() {
				env, err := d.Call(ctx, "acme", tc.tool, json.RawMessage(`{}`))
				switch {
				case err != nil:
					res <- err.Error()
				case env.Error != nil:
					res <- string(env.Error.Code) + ": " + env.Error.Message
				default:
					res <- ""
				}
			}()
			select {
			case <-tl.started:
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not start")
			}
			stopA()
			startWorker(t, ns, "B", tl, o)
			if tc.code == "" {
				select {
				case w := <-tl.started:
					if w != "B" {
						t.Fatalf("run again on %s", w)
					}
					tl.release <- struct{}{}
				case <-time.After(15 * time.Second):
					t.Fatal("the call was lost")
				}
			}
			var got string
			select {
			case got = <-res:
			case <-time.After(15 * time.Second):
				t.Fatal("no answer")
			}
			if (tc.code == "" && got != "") || (tc.code != "" && (len(got) < len(tc.code) || got[:len(tc.code)] != tc.code)) {
				t.Fatalf("answer %q, want %q", got, tc.code)
			}
			if n := tl.runs.Load(); n != tc.runs {
				t.Fatalf("ran %d times, want %d", n, tc.runs)
			}
		})
	}
}

// TestBackPressure fills the queue while no worker runs: the next call is
// refused at once with ErrSaturated.
func TestBackPressure(t *testing.T) {
	ns := queuetest.Start(t)
	o := natsexec.Options{Key: queuetest.Key(t), MaxQueued: 3}
	ctx := context.Background()
	d, err := natsexec.NewDispatcher(ctx, ns.Connect(t, "serve"), o)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			d.Call(cctx, "acme", "core:echo", nil)
		})
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if _, err := d.Call(ctx, "acme", "core:echo", nil); err != natsexec.ErrSaturated {
		t.Fatalf("a full queue: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the refusal was not immediate")
	}
	wg.Wait()
}

// startWorkerB runs a worker over the first-party toolpacks (benchmarks).
func startWorkerB(b testing.TB, ns *queuetest.Server, name string, o natsexec.Options) {
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(b)}, CacheDir: hosttest.CacheDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	nc := ns.Connect(b, "worker")
	w, err := natsexec.NewWorker(ctx, nc, name, map[string]*host.Host{"acme": h}, o)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done; nc.Close(); h.Close(context.Background()) })
}
