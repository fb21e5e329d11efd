// Command goprobe is an adversarial Go guest driven by its arguments:
//
//	{"ops":[{"op":"read","path":"/etc/passwd"}, ...], "strict":true}
//
// Each op is one of read, write (data), append (data), list, stat, mkdir,
// remove, rename (to), symlink (to = target), now, args, env (path = variable name,
// "" lists all), sleep (ms), panic, alloc (mb, retained until the
// runtime runs out of memory), fill (path, mb: writes that many MiB to
// one file, 1 MiB at a time), exit (code).
//
// It prints {"results":[{"ok":..,"data":..,"err":..}]}. With strict, the first
// failing op prints {"error":{"code":"PROBE","message":...}} and exits 1.
// Build with GOOS=wasip1 GOARCH=wasm.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

type op struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	To   string `json:"to"`
	Data string `json:"data"`
	MS   int    `json:"ms"`
	MB   int    `json:"mb"`
	Code int    `json:"code"`
}

type result struct {
	OK   bool   `json:"ok"`
	Data string `json:"data,omitempty"`
	Err  string `json:"err,omitempty"`
}

var sink [][]byte

func run(o op) (string, error) {
	switch o.Op {
	case "read":
		b, err := os.ReadFile(o.Path)
		return string(b), err
	case "write":
		return "", os.WriteFile(o.Path, []byte(o.Data), 0o644)
	case "append":
		f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(o.Data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return "", err
	case "list":
		ents, err := os.ReadDir(o.Path)
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return strings.Join(names, ","), err
	case "stat":
		fi, err := os.Stat(o.Path)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d", fi.Size()), nil
	case "mkdir":
		return "", os.Mkdir(o.Path, 0o755)
	case "remove":
		return "", os.Remove(o.Path)
	case "rename":
		return "", os.Rename(o.Path, o.To)
	case "symlink":
		return "", os.Symlink(o.To, o.Path)
	case "env":
		if o.Path != "" {
			v, ok := os.LookupEnv(o.Path)
			if !ok {
				return "", fmt.Errorf("%s not set", o.Path)
			}
			return v, nil
		}
		env := os.Environ()
		sort.Strings(env)
		return strings.Join(env, ","), nil
	case "now":
		return time.Now().UTC().Format(time.RFC3339Nano), nil
	case "args":
		return strings.Join(os.Args, " "), nil
	case "sleep":
		time.Sleep(time.Duration(o.MS) * time.Millisecond)
		return "", nil
	case "panic":
		panic("probe panic")
	case "alloc":
		for {
			b := make([]byte, o.MB<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			sink = append(sink, b)
		}
	case "fill":
		f, err := os.Create(o.Path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		chunk := make([]byte, 1<<20)
		for i := 0; i < o.MB; i++ {
			if _, err := f.Write(chunk); err != nil {
				return fmt.Sprintf("%d MiB written", i), err
			}
		}
		return "", f.Close()
	case "exit":
		os.Exit(o.Code)
	}
	return "", fmt.Errorf("unknown op %q", o.Op)
}

func main() {
	var in struct {
		Ops    []op `json:"ops"`
		Strict bool `json:"strict"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "bad input:", err)
		os.Exit(2)
	}
	out := struct {
		Results []result `json:"results"`
	}{Results: []result{}}
	for _, o := range in.Ops {
		data, err := run(o)
		r := result{OK: err == nil, Data: data}
		if err != nil {
			r.Err = err.Error()
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", o.Op, o.Path, err)
			if in.Strict {
				b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "PROBE", "message": o.Op + " " + o.Path + ": " + err.Error()}})
				os.Stdout.Write(b)
				os.Exit(1)
			}
		}
		out.Results = append(out.Results, r)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(3)
	}
}
