package ocipack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/agenthost/agenthost/host/ocipack"
	"github.com/agenthost/agenthost/host/toolpack"
)

// hostile serves the OCI distribution API on loopback: a real registry,
// except that the referrers API answers as referrers says and the paths
// of extra are served by their handlers.
func hostile(t *testing.T, referrers http.HandlerFunc, extra map[string]http.HandlerFunc) string {
	t.Helper()
	real := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/referrers/") {
			referrers(w, r)
			return
		}
		if h, ok := extra[r.URL.Path]; ok {
			h(w, r)
			return
		}
		real.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// index writes an OCI image index of manifests, with a Link header to
// next when it is not "".
func index(w http.ResponseWriter, manifests []ocispec.Descriptor, next string) {
	w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
	if next != "" {
		w.Header().Set("Link", "<"+next+">; rel=\"next\"")
	}
	json.NewEncoder(w).Encode(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: manifests})
}

// pushUnsigned pushes an unsigned pack to reg; it returns the pinned ref.
func pushUnsigned(t *testing.T, reg string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.tool.json"), []byte(`{}`), 0o644)
	var archive bytes.Buffer
	if _, err := toolpack.Pack(dir, &archive); err != nil {
		t.Fatal(err)
	}
	d, err := ocipack.Push(context.Background(), archive.Bytes(), reg+"/packs/demo:1", ocipack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return reg + "/packs/demo@" + d
}

// TestHostileReferrers pulls from registries whose referrers answer
// as an attacker would: a 3 GiB signature manifest, an endless chain of
// pages, hundreds of referrers, a listing that never ends. Each pull ends
// with an error or without the bogus signature, having fetched a bounded
// amount.
func TestHostileReferrers(t *testing.T) {
	sigDesc := func(body []byte, size int64) ocispec.Descriptor {
		d := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, body)
		d.ArtifactType, d.Size = ocipack.SignatureArtifactType, size
		return d
	}
	t.Run("a 3 GiB signature manifest", func(t *testing.T) {
		huge := sigDesc([]byte("huge"), 3<<30)
		var served atomic.Int64
		reg := hostile(t, func(w http.ResponseWriter, r *http.Request) {
			index(w, []ocispec.Descriptor{huge}, "")
		}, map[string]http.HandlerFunc{"/v2/packs/demo/manifests/" + huge.Digest.String(): func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			chunk := make([]byte, 1<<20)
			for served.Load() < 64<<20 { // stops at 64 MiB, so that an unfixed pull fails instead of eating 3 GiB
				n, err := w.Write(chunk)
				served.Add(int64(n))
				if err != nil {
					return
				}
			}
		}})
		p, err := ocipack.Pull(context.Background(), pushUnsigned(t, reg), true, ocipack.Options{})
		if served.Load() > 0 {
			t.Fatalf("fetched %d bytes of a 3 GiB referrer", served.Load())
		}
		if err == nil && len(p.Signatures) != 0 {
			t.Fatalf("a bogus signature: %d", len(p.Signatures))
		}
	})
	t.Run("an endless chain of pages", func(t *testing.T) {
		var pages atomic.Int64
		reg := hostile(t, func(w http.ResponseWriter, r *http.Request) {
			n := pages.Add(1)
			next := ""
			if n < 1000 { // an unfixed pull ends, after 1000 pages
				next = r.URL.Path + "?page=" + fmt.Sprint(n)
			}
			index(w, nil, next)
		}, nil)
		_, err := ocipack.Pull(context.Background(), pushUnsigned(t, reg), true, ocipack.Options{})
		if err == nil || !strings.Contains(err.Error(), "pages") {
			t.Fatalf("pulled after %d pages: %v", pages.Load(), err)
		}
		if pages.Load() > 10 {
			t.Fatalf("followed %d pages", pages.Load())
		}
	})
	t.Run("hundreds of referrers", func(t *testing.T) {
		var fetched atomic.Int64
		extra := map[string]http.HandlerFunc{}
		var descs []ocispec.Descriptor
		for i := range 300 {
			body := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"artifactType":"x/other","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[],"annotations":{"n":"%d"}}`, ocispec.MediaTypeImageManifest, i))
			d := sigDesc(body, int64(len(body)))
			descs = append(descs, d)
			extra["/v2/packs/demo/manifests/"+d.Digest.String()] = func(w http.ResponseWriter, r *http.Request) {
				fetched.Add(1)
				w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
				w.Write(body)
			}
		}
		reg := hostile(t, func(w http.ResponseWriter, r *http.Request) { index(w, descs, "") }, extra)
		_, err := ocipack.Pull(context.Background(), pushUnsigned(t, reg), true, ocipack.Options{})
		if err == nil || !strings.Contains(err.Error(), "referrers") {
			t.Fatalf("pulled after fetching %d referrers: %v", fetched.Load(), err)
		}
		if fetched.Load() > 64 {
			t.Fatalf("fetched %d referrers", fetched.Load())
		}
	})
	t.Run("a listing that never ends", func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		reg := hostile(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			case <-time.After(time.Minute): // an unfixed pull ends, after a minute
			}
			index(w, nil, "")
		}, nil)
		_, err := ocipack.Pull(context.Background(), pushUnsigned(t, reg), true, ocipack.Options{ReferrersTimeout: 200 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "deadline") {
			t.Fatalf("pulled: %v", err)
		}
	})
}
