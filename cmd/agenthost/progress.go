package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
)

// progressAfter is how long the tools may take to get ready before a
// progress bar appears: shorter waits are not worth a line.
const progressAfter = time.Second

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// warmWithProgress warms the tools ids on h while the caller runs them
// (their modules compile at once) and, when stderr is a terminal and the
// warm-up takes over progressAfter, draws a progress bar there. The
// returned function stops it and clears the bar; it must be called.
func (e *env) warmWithProgress(ctx context.Context, h *host.Host, ids []string) (stop func()) {
	if len(ids) == 0 || e.logJSON || !isTerminal(e.stderr) {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	bar := &progressBar{w: e.stderr, start: time.Now()}
	var wg sync.WaitGroup
	wg.Go(func() {
		h.Warm(ctx, host.WarmOptions{Tools: ids, Progress: bar.set, Runnable: true})
		bar.set(-1, 0) // finished: no more drawing
	})
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !bar.draw() {
					return
				}
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		bar.clear()
	}
}

// progressBar is one line on a terminal: tools ready out of all.
type progressBar struct {
	w     io.Writer
	start time.Time

	mu          sync.Mutex
	done, total int
	finished    bool
	drawn       bool
}

// set records the progress; done < 0 says the warm-up has ended.
func (b *progressBar) set(done, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if done < 0 {
		b.finished = true
		return
	}
	b.done, b.total = done, total
}

// draw redraws the bar once progressAfter has passed; false once the
// warm-up has ended.
func (b *progressBar) draw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return false
	}
	took := time.Since(b.start)
	if took < progressAfter {
		return true
	}
	fmt.Fprint(b.w, "\r"+progressLine(b.done, b.total, took))
	b.drawn = true
	return true
}

// clear erases the bar if it was drawn.
func (b *progressBar) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.drawn = false
	}
}

// progressWidth is the bar's width in cells.
const progressWidth = 24

// progressLine is the bar's text: cells filled in proportion, the
// counts and the time so far.
func progressLine(done, total int, took time.Duration) string {
	filled := 0
	if total > 0 {
		filled = min(progressWidth, done*progressWidth/total)
	}
	return fmt.Sprintf("agenthost: preparing tools [%s%s] %d/%d %.1fs\x1b[K",
		strings.Repeat("#", filled), strings.Repeat(".", progressWidth-filled), done, total, took.Seconds())
}
