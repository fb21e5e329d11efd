package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/guestpath"
)

// Limits of the arguments.
const (
	defaultMaxRows = 10000
	maxMaxRows     = 100000
)

// Input is the arguments object of data:csv-to-json: exactly one of CSV
// and Path.
type Input struct {
	CSV        *string `json:"csv,omitempty"`
	Path       *string `json:"path,omitempty"`
	Delimiter  string  `json:"delimiter,omitempty"`
	Header     *bool   `json:"header,omitempty"`
	Typed      bool    `json:"typed,omitempty"`
	TrimSpace  bool    `json:"trimSpace,omitempty"`
	LazyQuotes bool    `json:"lazyQuotes,omitempty"`
	Comment    string  `json:"comment,omitempty"`
	MaxRows    *int    `json:"maxRows,omitempty"`
}

// Output is the result of data:csv-to-json. With a header row, Rows are
// objects keyed by Columns; without (or for empty input), Columns is
// absent and, without a header, Rows are arrays. RowCount excludes the
// header.
type Output struct {
	Columns   []string `json:"columns,omitempty"`
	Rows      []any    `json:"rows"`
	RowCount  int      `json:"rowCount"`
	Truncated bool     `json:"truncated"`
}

// Convert parses the CSV of in. root is prepended to guest paths to form
// the paths opened: "" in the guest, a test folder in unit tests.
//
// Records may have different lengths: missing fields are null, extra
// fields get the columns "column_N" (1-based), null in the other rows. Empty or repeated header
// names are made unique the same way ("column_3", "name_2"). With Typed,
// fields that are JSON numbers (no leading zeros, so "007" stays a string)
// become numbers and "true"/"false" become booleans. Quotes follow RFC
// 4180 unless LazyQuotes is set, which accepts a quote inside an unquoted
// field and a stray quote inside a quoted one.
func Convert(root string, in Input) (Output, error) {
	delim, err := delimiter(in.Delimiter)
	if err != nil {
		return Output{}, err
	}
	var comment rune
	if in.Comment != "" {
		r, size := utf8.DecodeRuneInString(in.Comment)
		if size != len(in.Comment) || r == delim || r == '"' || r == '\r' || r == '\n' {
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "comment must be one character other than the delimiter, a quote or a newline, got %q", in.Comment)
		}
		comment = r
	}
	limit := defaultMaxRows
	if in.MaxRows != nil {
		limit = *in.MaxRows
	}
	if limit < 1 || limit > maxMaxRows {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "maxRows must be between 1 and %d, got %d", maxMaxRows, limit)
	}
	src, closeSrc, err := source(root, in)
	if err != nil {
		return Output{}, err
	}
	defer closeSrc()

	r := csv.NewReader(src)
	r.Comma = delim
	r.Comment = comment
	r.FieldsPerRecord = -1
	r.LazyQuotes = in.LazyQuotes
	r.TrimLeadingSpace = in.TrimSpace
	r.ReuseRecord = false

	header := in.Header == nil || *in.Header
	out := Output{Rows: []any{}}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return Output{}, guest.Errorf(abi.CodeInvalidArguments, "csv line %d, column %d: %s", pe.Line, pe.Column, pe.Err.Error())
			}
			return Output{}, fmt.Errorf("read csv: %w", err)
		}
		if in.TrimSpace {
			for i := range rec {
				rec[i] = strings.TrimSpace(rec[i])
			}
		}
		if header && out.Columns == nil {
			out.Columns = uniqueColumns(rec)
			continue
		}
		if out.RowCount == limit {
			out.Truncated = true
			break
		}
		out.Rows = append(out.Rows, makeRow(rec, &out.Columns, header, in.Typed))
		out.RowCount++
	}
	if header {
		fillMissing(out.Rows, out.Columns)
	}
	return out, nil
}

// source opens the CSV text or file.
func source(root string, in Input) (io.Reader, func(), error) {
	switch {
	case (in.CSV == nil) == (in.Path == nil):
		return nil, nil, guest.Errorf(abi.CodeInvalidArguments, "give exactly one of csv and path")
	case in.CSV != nil:
		return strings.NewReader(*in.CSV), func() {}, nil
	}
	p, err := guestpath.Resolve(*in.Path)
	if err != nil {
		return nil, nil, guest.Errorf(abi.CodeInvalidArguments, "%s", err.Error())
	}
	f, err := os.Open(root + p)
	if err != nil {
		return nil, nil, guestpath.FileError("open", p, err)
	}
	return f, func() { _ = f.Close() }, nil
}

// delimiter parses the delimiter argument: one character, or "tab".
func delimiter(s string) (rune, error) {
	switch s {
	case "":
		return ',', nil
	case "tab", `\t`:
		return '\t', nil
	}
	r, size := utf8.DecodeRuneInString(s)
	if size != len(s) || r == '"' || r == '\r' || r == '\n' || r == utf8.RuneError {
		return 0, guest.Errorf(abi.CodeInvalidArguments, "delimiter must be one character other than a quote or a newline (or \"tab\"), got %q", s)
	}
	return r, nil
}

// uniqueColumns names the columns from the header record.
func uniqueColumns(rec []string) []string {
	cols := make([]string, len(rec))
	seen := map[string]bool{}
	for i, name := range rec {
		if name == "" {
			name = "column_" + strconv.Itoa(i+1)
		}
		base := name
		for n := 2; seen[name]; n++ {
			name = base + "_" + strconv.Itoa(n)
		}
		seen[name] = true
		cols[i] = name
	}
	return cols
}

// makeRow converts one record. With a header it is an object; fields
// beyond the known columns add columns.
func makeRow(rec []string, cols *[]string, header, typed bool) any {
	if !header {
		row := make([]any, len(rec))
		for i, f := range rec {
			row[i] = value(f, typed)
		}
		return row
	}
	for len(*cols) < len(rec) {
		*cols = uniqueAppend(*cols, "column_"+strconv.Itoa(len(*cols)+1))
	}
	row := make(map[string]any, len(*cols))
	for i, c := range *cols {
		if i < len(rec) {
			row[c] = value(rec[i], typed)
		} else {
			row[c] = nil
		}
	}
	return row
}

// fillMissing sets columns added by a later, longer record to null in the
// rows read before it, so every row has every column.
func fillMissing(rows []any, cols []string) {
	for _, r := range rows {
		row := r.(map[string]any)
		for _, c := range cols {
			if _, ok := row[c]; !ok {
				row[c] = nil
			}
		}
	}
}

// uniqueAppend appends name, suffixed if it is already a column.
func uniqueAppend(cols []string, name string) []string {
	base := name
	for n := 2; contains(cols, name); n++ {
		name = base + "_" + strconv.Itoa(n)
	}
	return append(cols, name)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// value types a field when typed is set.
func value(f string, typed bool) any {
	if !typed {
		return f
	}
	switch f {
	case "true":
		return true
	case "false":
		return false
	}
	if isJSONNumber(f) {
		return json.Number(f)
	}
	return f
}

// isJSONNumber reports whether s is a number in JSON syntax.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}
