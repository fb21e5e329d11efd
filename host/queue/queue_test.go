package queue_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/queue"
)

// testDialTimeout is how long a test's client waits to connect: the
// client's default (2 s) is too short under the race detector on a
// loaded 2-core machine.
const testDialTimeout = 15 * time.Second

// startNATS runs an embedded nats-server with JetStream on a free port.
func startNATS(t *testing.T) string { return startNATSB(t) }

func startNATSB(t testing.TB) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

func connect(t *testing.T, url string) *nats.Conn { return connectB(t, url) }

func connectB(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(testDialTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// tools are the Go tools of the workers: one that blocks until released
// (counting its runs), non-idempotent and idempotent, and one that says
// which worker ran it.
type tools struct {
	release chan struct{}
	started chan string
	runs    atomic.Int32
}

func (tl *tools) build(worker string) []host.Tool {
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
		host.Func("app:once", "Blocks; not idempotent.", block),
		host.Func("app:again", "Blocks; idempotent.", block, host.WithIdempotent()),
		host.Func("app:who", "Says which worker ran it.", func(context.Context, none) (map[string]string, error) {
			return map[string]string{"worker": worker}, nil
		}),
	}
}

// startWorker runs a worker with its own host until stop is called.
func startWorker(t *testing.T, url, name string, tl *tools, o queue.Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Tools: tl.build(name)})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.Timeout(testDialTimeout))
	if err != nil {
		t.Fatal(err)
	}
	w, err := queue.NewWorker(ctx, nc, name, map[string]*host.Host{"acme": h}, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			nc.Close()
			h.Close(context.Background())
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestQueue runs calls through an embedded nats-server and two workers:
// every call answered, spread over both; a worker killed mid-call: the
// call is run again elsewhere only for an idempotent tool, otherwise it
// fails with CANCELLED and ran once; a full queue is refused at once.
func TestQueue(t *testing.T) {
	url := startNATS(t)
	o := queue.Options{AckWait: 1500 * time.Millisecond, Concurrency: 4}
	ctx := context.Background()
	d, err := queue.NewDispatcher(ctx, connect(t, url), o)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{release: make(chan struct{}), started: make(chan string, 10)}
	startWorker(t, url, "A", tl, o)
	startWorker(t, url, "B", tl, o)
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
	if env, err := d.Call(ctx, "beta", "core:echo", nil); err != nil || env.Error == nil || env.Error.Code != "LOAD_ERROR" {
		t.Fatalf("a tenant no worker serves: %v %+v", err, env)
	}

	t.Log("spread", seen)
}

// TestWorkerDies kills the only worker while it runs a call; a second
// worker then gets the call again: it runs an idempotent tool again, and
// answers CANCELLED without running a tool that is not idempotent.
func TestWorkerDies(t *testing.T) {
	for _, tc := range []struct {
		tool string
		code string
		runs int32
	}{
		{"app:once", "CANCELLED", 1},
		{"app:again", "", 2},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			url := startNATS(t)
			o := queue.Options{AckWait: time.Second, Concurrency: 2}
			ctx := context.Background()
			d, err := queue.NewDispatcher(ctx, connect(t, url), o)
			if err != nil {
				t.Fatal(err)
			}
			tl := &tools{release: make(chan struct{}, 1), started: make(chan string, 4)}
			stopA := startWorker(t, url, "A", tl, o)
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
			startWorker(t, url, "B", tl, o)
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
	url := startNATS(t)
	o := queue.Options{MaxQueued: 3}
	ctx := context.Background()
	d, err := queue.NewDispatcher(ctx, connect(t, url), o)
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
	if _, err := d.Call(ctx, "acme", "core:echo", nil); err != queue.ErrSaturated {
		t.Fatalf("a full queue: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the refusal was not immediate")
	}
	wg.Wait()
}

// startWorkerB runs a worker over the first-party toolpacks (benchmarks).
func startWorkerB(b testing.TB, url, name string, o queue.Options) {
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(b)}, CacheDir: hosttest.CacheDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.Timeout(testDialTimeout))
	if err != nil {
		b.Fatal(err)
	}
	w, err := queue.NewWorker(ctx, nc, name, map[string]*host.Host{"acme": h}, o)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done; nc.Close(); h.Close(context.Background()) })
}
