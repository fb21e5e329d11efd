// Command record is the test guest of recording and replay, built with
// the guest SDK as a command and as a reactor. Every call answers with
// what a run sees besides its arguments: the wall clock at start-up and
// now, the time elapsed since start-up, 16 bytes of crypto/rand, a
// math/rand/v2 number (the runtime's generator, seeded at start-up), the
// order in which a map's keys come out (its hash seed is drawn at
// start-up), and the arguments. With "reads": N it first reads the
// clock N times.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/agenthost/agenthost/abi/guest"
)

var started = time.Now()

type in struct {
	N     int `json:"n"`
	Reads int `json:"reads"`
}

func main() {
	guest.Run(func(_ context.Context, a in) (string, error) {
		for range a.Reads {
			_ = time.Now()
		}
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		m := map[string]int{}
		for i := range 16 {
			m[fmt.Sprint("k", i)] = i
		}
		var order []string
		for k := range m {
			order = append(order, k)
		}
		time.Sleep(time.Millisecond)
		return strings.Join([]string{
			started.UTC().Format(time.RFC3339Nano),
			time.Now().UTC().Format(time.RFC3339Nano),
			time.Since(started).String(),
			hex.EncodeToString(b),
			fmt.Sprint(mrand.Uint64()),
			strings.Join(order, ","),
			fmt.Sprint(a.N),
		}, " "), nil
	})
}
