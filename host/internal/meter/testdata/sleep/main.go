// Command sleep sleeps for the duration in its first argument (default
// 1h) and prints "woke": a guest blocked in poll_oneoff, for testing that
// a timeout still fires inside a blocking host call.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	d := time.Hour
	if len(os.Args) > 1 {
		v, err := time.ParseDuration(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		d = v
	}
	time.Sleep(d)
	fmt.Println("woke")
}
