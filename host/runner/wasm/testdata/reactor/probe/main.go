// Command probe is the test guest of the fast path, built with the guest
// SDK both as a command (slow path) and as a reactor
// (-buildmode=c-shared, fast path) so the same cases run on both. Its
// arguments are {"op": ..., ...}:
//
//	echo      returns {"args": [...], "env": [...]}
//	remember  stores secret in a package variable, a heap allocation, a
//	          static buffer, a /tmp file and the environment
//	recall    reports each of those places that is not pristine, and
//	          whether the secret (given reversed) is anywhere in memory
//	loop      spins forever            sleep  sleeps ms milliseconds
//	alloc     allocates mb MiB, kept   grow   allocates mb MiB, then answers
//	flood     writes mb MiB to stdout  exit   exits with code
//	panic     panics                   fail   returns a tool error
//	read      reads path               write  writes data to path
//	recurse   recurses without end
//	leak      opens /tmp/leak and keeps it open
//	closefd   closes descriptor code (e.g. 1, stdout, or 3, a mount)
//	keeproot  writes /tmp/left-behind, opens the /tmp mount's root and
//	          keeps it open; its descriptor number is the length
//	listfd    lists the directory open as descriptor code
//	now       returns the time and 8 random bytes
//	gcstats   returns the runtime's collection count and heap figures
//	startup   returns what the start-up read: with the argument
//	          --startup-read=PATH (handler config startup-read), main
//	          reads PATH before it serves calls
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/agenthost/agenthost/abi/guest"
)

type in struct {
	Op     string `json:"op"`
	Secret string `json:"secret"`
	MS     int    `json:"ms"`
	MB     int    `json:"mb"`
	Code   int    `json:"code"`
	Path   string `json:"path"`
	Data   string `json:"data"`
}

type out struct {
	Args   []string `json:"args,omitempty"`
	Env    []string `json:"env,omitempty"`
	Dirty  []string `json:"dirty,omitempty"`
	Data   string   `json:"data,omitempty"`
	Calls  int      `json:"calls"`
	Length int      `json:"length,omitempty"`
}

// The places a call could try to leave something for the next one.
var (
	remembered string
	heap       *[]byte
	static     [4096]byte
	calls      int
	sink       [][]byte
	kept       *os.File
	startup    string
)

func main() {
	for _, a := range os.Args[1:] {
		if p, ok := strings.CutPrefix(a, "--startup-read="); ok {
			b, err := os.ReadFile(p)
			startup = fmt.Sprintf("%s %v", b, err)
		}
	}
	guest.Run(handle)
}

func handle(_ context.Context, a in) (out, error) {
	calls++
	o := out{Calls: calls}
	switch a.Op {
	case "echo":
		o.Args, o.Env = os.Args, os.Environ()
	case "remember":
		remembered = a.Secret
		b := []byte(a.Secret)
		heap = &b
		copy(static[:], a.Secret)
		if err := os.WriteFile("/tmp/secret", []byte(a.Secret), 0o600); err != nil {
			return o, err
		}
		if err := os.Setenv("SECRET", a.Secret); err != nil {
			return o, err
		}
	case "recall":
		if remembered != "" {
			o.Dirty = append(o.Dirty, "package variable")
		}
		if heap != nil {
			o.Dirty = append(o.Dirty, "heap")
		}
		if static != [4096]byte{} {
			o.Dirty = append(o.Dirty, "static buffer")
		}
		if _, err := os.Stat("/tmp/secret"); err == nil {
			o.Dirty = append(o.Dirty, "tmp file")
		}
		if os.Getenv("SECRET") != "" {
			o.Dirty = append(o.Dirty, "environment")
		}
		if scan(a.Secret) {
			o.Dirty = append(o.Dirty, "memory")
		}
	case "loop":
		for i := 0; ; i++ {
			calls += i & 1
		}
	case "sleep":
		time.Sleep(time.Duration(a.MS) * time.Millisecond)
	case "alloc":
		for {
			sink = append(sink, make([]byte, a.MB<<20))
		}
	case "grow":
		b := make([]byte, a.MB<<20)
		b[len(b)-1] = 1
		o.Length = len(b)
	case "flood":
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range a.MB {
			_, _ = os.Stdout.Write(chunk)
		}
	case "exit":
		os.Exit(a.Code)
	case "panic":
		panic("probe panic")
	case "fail":
		return o, errors.New("probe failure")
	case "read":
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return o, err
		}
		o.Data = string(b)
	case "write":
		if err := os.WriteFile(a.Path, []byte(a.Data), 0o644); err != nil {
			return o, err
		}
	case "recurse":
		o.Length = recurse(1)
	case "leak":
		f, err := os.Create("/tmp/leak")
		if err != nil {
			return o, err
		}
		kept = f
	case "closefd":
		if err := syscall.Close(a.Code); err != nil {
			return o, err
		}
	case "keeproot":
		if err := os.WriteFile("/tmp/left-behind", []byte("x"), 0o600); err != nil {
			return o, err
		}
		d, err := os.Open("/tmp")
		if err != nil {
			return o, err
		}
		o.Length = int(d.Fd())
		kept = d
	case "listfd":
		d := os.NewFile(uintptr(a.Code), "kept")
		entries, err := d.ReadDir(-1)
		if err != nil {
			return o, err
		}
		for _, e := range entries {
			o.Data += e.Name() + " "
		}
	case "gcstats":
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		o.Data = fmt.Sprintf("numgc=%d heap=%d next=%d sys=%d", ms.NumGC, ms.HeapAlloc, ms.NextGC, ms.Sys)
	case "startup":
		o.Data = startup
	case "now":
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		o.Data = time.Now().UTC().Format(time.RFC3339Nano) + " " + hex.EncodeToString(b)
	default:
		return o, errors.New("unknown op " + a.Op)
	}
	return o, nil
}

func recurse(n int) int { return recurse(n+1) + 1 }

// scan reports whether the secret whose reverse is rev appears in the
// guest's memory from address 1 to the end of a fresh allocation (past
// the heap in use). The call gets the secret reversed, so neither its
// input nor the search leaves a forward copy in memory.
func scan(rev string) bool {
	n := len(rev)
	if n == 0 {
		return false
	}
	end := make([]byte, 64<<10)
	base := uintptr(unsafe.Pointer(&end[0]))
	first := unsafe.Add(unsafe.Pointer(&end[0]), -int(base-1)) // address 1
	mem := unsafe.Slice((*byte)(first), int(base-1)+len(end))
	for i := 0; i+n <= len(mem); i++ {
		match := true
		for k := 0; k < n; k++ {
			if mem[i+k] != rev[n-1-k] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
