// primes.c: a WASI command in C (wasi-libc) counting the primes below
// argv[1] (default 3000000) by trial division, like ../primes/main.go.
// Build: clang --target=wasm32-wasi --sysroot=/usr -O2 -o primes.wasm primes.c
#include <stdio.h>
#include <stdlib.h>

static int is_prime(int n) {
	if (n < 2) return 0;
	if (n % 2 == 0) return n == 2;
	for (int d = 3; d * d <= n; d += 2)
		if (n % d == 0) return 0;
	return 1;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 3000000;
	int count = 0;
	for (int i = 0; i < n; i++) count += is_prime(i);
	printf("%d\n", count);
	return 0;
}
