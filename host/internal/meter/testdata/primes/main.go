// Command primes counts the primes below N (first argument, default
// 3000000) by trial division and prints the count: the compute-heavy Go
// guest of the metering benchmarks. With the argument "map" it
// also fills and sums a map, whose layout depends on the runtime's
// random seed.
package main

import (
	"fmt"
	"os"
	"strconv"
)

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	if n%2 == 0 {
		return n == 2
	}
	for d := 3; d*d <= n; d += 2 {
		if n%d == 0 {
			return false
		}
	}
	return true
}

func main() {
	n := 3000000
	if len(os.Args) > 1 {
		v, err := strconv.Atoi(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		n = v
	}
	count := 0
	for i := 0; i < n; i++ {
		if isPrime(i) {
			count++
		}
	}
	if len(os.Args) > 2 && os.Args[2] == "map" {
		m := map[int]int{}
		for i := 0; i < 1000; i++ {
			m[i*7919] = i
		}
		sum := 0
		for k, v := range m {
			sum += k ^ v
		}
		fmt.Println(count, sum)
		return
	}
	fmt.Println(count)
}
