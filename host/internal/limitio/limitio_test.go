package limitio_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/internal/limitio"
)

func TestWriter(t *testing.T) {
	tests := []struct {
		name     string
		limit    int64
		writes   []string
		want     string
		exceeded bool
	}{
		{"under", 10, []string{"abc", "def"}, "abcdef", false},
		{"exact", 6, []string{"abc", "def"}, "abcdef", false},
		{"over keeps prefix", 4, []string{"abc", "def"}, "abcd", true},
		{"zero", 0, []string{"a"}, "", true},
		{"negative is zero", -1, []string{"a"}, "", true},
		{"empty write at cap", 3, []string{"abc", ""}, "abc", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hooks := 0
			w := limitio.NewWriter(tc.limit, func() { hooks++ })
			var lastErr error
			for _, s := range tc.writes {
				if _, err := w.Write([]byte(s)); err != nil {
					lastErr = err
				}
			}
			if got := string(w.Bytes()); got != tc.want {
				t.Errorf("Bytes = %q, want %q", got, tc.want)
			}
			if w.Exceeded() != tc.exceeded {
				t.Errorf("Exceeded = %v, want %v", w.Exceeded(), tc.exceeded)
			}
			if tc.exceeded != errors.Is(lastErr, limitio.ErrLimit) {
				t.Errorf("err = %v, exceeded %v", lastErr, tc.exceeded)
			}
			wantHooks := 0
			if tc.exceeded {
				wantHooks = 1
			}
			if hooks != wantHooks {
				t.Errorf("hook called %d times, want %d", hooks, wantHooks)
			}
		})
	}
}

func TestWriter_afterExceedFails(t *testing.T) {
	w := limitio.NewWriter(2, nil)
	_, _ = w.Write([]byte("abc"))
	n, err := w.Write([]byte("d"))
	if n != 0 || !errors.Is(err, limitio.ErrLimit) {
		t.Fatalf("write after exceed = %d, %v", n, err)
	}
}

func TestLines(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		add    []string
		want   []string
	}{
		{"split", 100, []string{"a\nb", "c\n", "d"}, nil, []string{"a", "bc", "d"}},
		{"crlf", 100, []string{"a\r\nb\r\n"}, nil, []string{"a", "b"}},
		{"empty lines kept", 100, []string{"\n\n"}, nil, []string{"", ""}},
		{"add flushes partial", 100, []string{"x"}, []string{"note"}, []string{"x", "note"}},
		{"truncate", 5, []string{"abc\ndefg\nhij\n"}, nil, []string{"abc", "de" + limitio.TruncatedMarker}},
		{"truncate long unterminated", 4, []string{strings.Repeat("z", 100)}, nil, []string{"zzzz" + limitio.TruncatedMarker}},
		{"utf8 not split", 4, []string{"ab€\n"}, nil, []string{"ab" + limitio.TruncatedMarker}},
		{"add after truncation dropped", 3, []string{"abcd\n"}, []string{"late"}, []string{"abc" + limitio.TruncatedMarker}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := limitio.NewLines(tc.limit)
			for _, s := range tc.writes {
				if n, err := l.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			for _, s := range tc.add {
				l.Add(s)
			}
			got := l.Lines()
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("Lines = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLines_budgetHolds(t *testing.T) {
	l := limitio.NewLines(0)
	line := strings.Repeat("x", 1000) + "\n"
	for range 1000 {
		_, _ = l.Write([]byte(line))
	}
	total := 0
	for _, s := range l.Lines() {
		total += len(s)
	}
	if total > limitio.DefaultLogBytes+len(limitio.TruncatedMarker) {
		t.Fatalf("kept %d bytes, budget %d", total, limitio.DefaultLogBytes)
	}
	if !l.Truncated() {
		t.Fatal("not marked truncated")
	}
}

func TestConcurrent(t *testing.T) {
	w := limitio.NewWriter(1000, nil)
	l := limitio.NewLines(1000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = w.Write([]byte("ab"))
				_, _ = l.Write([]byte("ab\n"))
			}
		}()
	}
	wg.Wait()
	if len(w.Bytes()) != 1000 || !w.Exceeded() {
		t.Fatalf("len %d exceeded %v", len(w.Bytes()), w.Exceeded())
	}
	if len(l.Lines()) == 0 {
		t.Fatal("no lines")
	}
}
