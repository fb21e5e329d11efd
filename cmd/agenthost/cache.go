package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/host/cache"
)

func cacheCommand() command {
	return command{
		name: "cache", usage: "cache ls|prune [--older-than DURATION] [--max-size SIZE] [--json]",
		summary: "list or prune the host's cache (compiled modules, snapshots, script dependencies, tool caches)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.BoolVar(&e.asJSON, "json", false, "print JSON")
			fs.DurationVar(&e.olderThan, "older-than", 0, "prune: remove entries unused for this long (e.g. 720h)")
			fs.StringVar(&e.maxSize, "max-size", "", "prune: then remove the least recently used entries until the cache fits (e.g. 500MiB)")
		},
		run: runCache,
	}
}

// hostCacheDir is the cache folder the host would use: --cache-dir, else
// $XDG_CACHE_HOME/agenthost, else $HOME/.cache/agenthost.
func (e *env) hostCacheDir() (string, error) {
	dir, err := cache.Resolve(e.cacheDir)
	if err != nil {
		return "", usageError{err.Error()}
	}
	return dir, nil
}

func runCache(_ context.Context, e *env, args []string) error {
	if len(args) != 1 || (args[0] != "ls" && args[0] != "prune") {
		return usageError{"cache takes one subcommand: ls or prune"}
	}
	dir, err := e.hostCacheDir()
	if err != nil {
		return err
	}
	if args[0] == "ls" {
		if e.olderThan != 0 || e.maxSize != "" {
			return usageError{"--older-than and --max-size belong to cache prune"}
		}
		entries, err := cache.List(dir)
		if err != nil {
			return err
		}
		return e.printEntries(dir, entries, "")
	}
	o := cache.PruneOptions{OlderThan: e.olderThan}
	if e.maxSize != "" {
		n, err := parseSize(e.maxSize)
		if err != nil {
			return usageError{"--max-size: " + err.Error()}
		}
		o.MaxBytes = n
	}
	if o.OlderThan <= 0 && o.MaxBytes <= 0 {
		return usageError{"cache prune needs --older-than or --max-size"}
	}
	removed, err := cache.Prune(dir, o)
	if perr := e.printEntries(dir, removed, "removed "); perr != nil {
		return perr
	}
	return err
}

func (e *env) printEntries(dir string, entries []cache.Entry, verb string) error {
	if entries == nil {
		entries = []cache.Entry{}
	}
	if e.asJSON {
		return e.printJSON(struct {
			Dir     string        `json:"dir"`
			Entries []cache.Entry `json:"entries"`
		}{dir, entries})
	}
	var total int64
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tSIZE\tLAST USED\tPATH")
	for _, en := range entries {
		total += en.Size
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", en.Kind, sizeHuman(en.Size), en.Used.Local().Format("2006-01-02 15:04"), escapeText(en.Path))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(e.stdout, "%s%d entries, %s in %s\n", verb, len(entries), sizeHuman(total), escapeText(dir))
	return err
}

// parseSize reads "1048576", "512KiB", "500MiB", "2GiB" (KB/MB/GB too,
// as powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional KiB, MiB or GiB", s)
	}
	return n * mult, nil
}

// sizeHuman prints n with one decimal in the largest binary unit below it.
func sizeHuman(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
