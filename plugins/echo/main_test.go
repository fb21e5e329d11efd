package main

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

func TestEcho(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]json.RawMessage
		want map[string]json.RawMessage
	}{
		{"values kept as written",
			map[string]json.RawMessage{"n": json.RawMessage(`1.50`), "s": json.RawMessage(`"<b>"`), "o": json.RawMessage(`{"z":1,"a":[]}`)},
			map[string]json.RawMessage{"n": json.RawMessage(`1.50`), "s": json.RawMessage(`"<b>"`), "o": json.RawMessage(`{"z":1,"a":[]}`)}},
		{"nil becomes an empty object", nil, map[string]json.RawMessage{}},
		{"empty", map[string]json.RawMessage{}, map[string]json.RawMessage{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := echo(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("echo = %v, want %v", got, tc.want)
			}
		})
	}
}
