package credential

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestHMAC(t *testing.T) {
	if _, err := NewHMAC([]byte("short")); err == nil {
		t.Fatal("a short key")
	}
	h, _ := NewHMAC([]byte(strings.Repeat("k", 32)))
	now := time.Unix(1_800_000_000, 0)
	h.now = func() time.Time { return now }
	c, err := h.Mint(context.Background(), Request{Tenant: "acme", Tool: "cal:read", Name: "calendar", TTL: time.Hour})
	if err != nil || !strings.HasPrefix(c.Token, Prefix) || c.Expires.Sub(now) != MaxTTL {
		t.Fatalf("%+v %v", c, err)
	}
	if cl, err := h.Verify(c.Token, "acme", "cal:read"); err != nil || cl.Name != "calendar" {
		t.Fatalf("%+v %v", cl, err)
	}
	other, _ := NewHMAC([]byte(strings.Repeat("x", 32)))
	other.now = h.now
	for name, tc := range map[string]struct {
		h            *HMAC
		token, tn, t string
		want         string
	}{
		"another tenant": {h, c.Token, "beta", "", "another tenant"},
		"another tool":   {h, c.Token, "", "x:y", "another tool"},
		"forged":         {other, c.Token, "", "", "bad signature"},
		"tampered":       {h, c.Token[:20] + "A" + c.Token[21:], "", "", ""},
		"garbage":        {h, "ahc1.!!.??", "", "", "bad signature"},
		"not a token":    {h, "hello", "", "", "not a token"},
	} {
		if _, err := tc.h.Verify(tc.token, tc.tn, tc.t); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	now = now.Add(MaxTTL + time.Second)
	if _, err := h.Verify(c.Token, "", ""); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired: %v", err)
	}
	if got := Find("x " + c.Token + " y"); len(got) != 1 || got[0] != c.Token {
		t.Fatalf("find %v", got)
	}
	if EnvName("my-cal") != "AGENTHOST_CREDENTIAL_MY_CAL" || !ValidName("calendar") || ValidName("Cal") {
		t.Fatal("names")
	}
}

// FuzzVerify: any string is an error or valid claims, never a panic.
func FuzzVerify(f *testing.F) {
	h, _ := NewHMAC([]byte(strings.Repeat("k", 32)))
	c, _ := h.Mint(context.Background(), Request{Tenant: "a", Tool: "b:c", Name: "n"})
	f.Add(c.Token)
	f.Add("ahc1..")
	f.Add("ahc1.e30.")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = h.Verify(s, "", "")
	})
}
