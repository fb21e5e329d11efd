//go:build !unix

package cputime

import "time"

func read(who) time.Duration { return 0 }
