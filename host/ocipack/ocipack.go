// Package ocipack moves packed toolpacks through OCI registries with
// oras-go: a toolpack is an artifact whose one layer is the reproducible
// archive (see package toolpack), and its signature (toolpack.json.sig)
// is attached as a referrer artifact, so a reviewer's signature travels
// with the pack and can be added after it was pushed.
package ocipack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/agenthost/agenthost/host/toolpack"
)

// Media and artifact types.
const (
	ArtifactType          = "application/vnd.agenthost.toolpack.v1"
	LayerMediaType        = "application/vnd.agenthost.toolpack.layer.v1.tar+gzip"
	SignatureArtifactType = "application/vnd.agenthost.toolpack.signature.v1"
	SignatureMediaType    = "application/vnd.agenthost.toolpack.signature.v1+sshsig"
)

// Bounds on what a registry can make a pull fetch. The referrers are the
// registry's word, not pinned by the pack's digest: each is capped.
const (
	// maxArchive bounds a pulled archive.
	maxArchive = 512 << 20
	// maxMetadata bounds one response of the registry's metadata APIs (a
	// page of referrers, a manifest).
	maxMetadata = 1 << 20
	// maxReferrers bounds the signature referrers looked at, and
	// maxReferrerPages the pages of the referrers listing.
	maxReferrers     = 64
	maxReferrerPages = 8
	// maxSignatureManifest bounds a signature artifact's manifest (about
	// 600 bytes) and maxSignature its one layer (an armored SSH signature
	// is under 2 KiB).
	maxSignatureManifest = 16 << 10
	maxSignature         = 64 << 10
	// DefaultReferrersTimeout bounds the time spent finding and fetching
	// the signatures of a pull.
	DefaultReferrersTimeout = 30 * time.Second
)

// Options configure a registry connection.
type Options struct {
	// PlainHTTP talks HTTP instead of HTTPS. It is always on for a
	// registry on a loopback address (localhost, 127.0.0.0/8, [::1]) and
	// never needed elsewhere.
	PlainHTTP bool
	// ReferrersTimeout bounds the time a pull spends on the signatures
	// attached as referrers (0: DefaultReferrersTimeout).
	ReferrersTimeout time.Duration
}

// loopback reports whether a registry host:port is on this machine.
func loopback(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

func repository(ref string, o Options) (*remote.Repository, registry.Reference, error) {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return nil, r, fmt.Errorf("oci: %q: %w", ref, err)
	}
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return nil, r, fmt.Errorf("oci: %q: %w", ref, err)
	}
	repo.PlainHTTP = o.PlainHTTP || loopback(r.Registry)
	repo.MaxMetadataBytes = maxMetadata
	repo.ReferrerListMaxPages = maxReferrerPages
	return repo, r, nil
}

// Push pushes a packed toolpack (a .tar.gz from toolpack.Pack) to ref
// (registry/repository:tag) and, when the archive holds a signature,
// attaches it as a referrer. It returns the digest to pull it by.
func Push(ctx context.Context, archive []byte, ref string, o Options) (string, error) {
	repo, r, err := repository(ref, o)
	if err != nil {
		return "", err
	}
	if r.Reference == "" {
		return "", fmt.Errorf("oci: %q: name a tag to push to (registry/repository:tag)", ref)
	}
	sig, err := fileInArchive(archive, toolpack.SignatureFile)
	if err != nil {
		return "", err
	}
	store := memory.New()
	layer, err := oras.PushBytes(ctx, store, LayerMediaType, archive)
	if err != nil {
		return "", fmt.Errorf("oci: %w", err)
	}
	man, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		return "", fmt.Errorf("oci: %w", err)
	}
	if err := store.Tag(ctx, man, r.Reference); err != nil {
		return "", fmt.Errorf("oci: %w", err)
	}
	if _, err := oras.Copy(ctx, store, r.Reference, repo, r.Reference, oras.DefaultCopyOptions); err != nil {
		return "", fmt.Errorf("oci: push %s: %w", ref, err)
	}
	if sig != nil {
		if err := attach(ctx, store, repo, man, sig); err != nil {
			return "", err
		}
	}
	return man.Digest.String(), nil
}

// attach pushes sig as a referrer of man.
func attach(ctx context.Context, store *memory.Store, repo *remote.Repository, man ocispec.Descriptor, sig []byte) error {
	layer, err := oras.PushBytes(ctx, store, SignatureMediaType, sig)
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	sm, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, SignatureArtifactType, oras.PackManifestOptions{Subject: &man, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		return fmt.Errorf("oci: %w", err)
	}
	if err := oras.CopyGraph(ctx, store, repo, sm, oras.DefaultCopyGraphOptions); err != nil {
		return fmt.Errorf("oci: attach the signature: %w", err)
	}
	return nil
}

// Pulled is a toolpack fetched from a registry.
type Pulled struct {
	Digest  string
	Archive []byte
	// Signatures are the signatures attached as referrers, newest last.
	Signatures [][]byte
}

// Pull fetches the toolpack at ref. With pinned, ref must name a digest
// (registry/repository@sha256:…): what loads is then exactly what was
// reviewed, whatever a tag points at now. oras checks every blob against
// its digest.
func Pull(ctx context.Context, ref string, pinned bool, o Options) (*Pulled, error) {
	repo, r, err := repository(ref, o)
	if err != nil {
		return nil, err
	}
	if pinned {
		if _, err := r.Digest(); err != nil {
			return nil, fmt.Errorf("oci: %q: pin the toolpack by digest (registry/repository@sha256:…); a tag can move after review", ref)
		}
	}
	desc, raw, err := oras.FetchBytes(ctx, repo, r.Reference, oras.DefaultFetchBytesOptions)
	if err != nil {
		return nil, fmt.Errorf("oci: pull %s: %w", ref, err)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return nil, fmt.Errorf("oci: %s: the manifest is not JSON: %w", ref, err)
	}
	if man.ArtifactType != ArtifactType || len(man.Layers) != 1 || man.Layers[0].MediaType != LayerMediaType {
		return nil, fmt.Errorf("oci: %s is not an agenthost toolpack (artifact type %q)", ref, man.ArtifactType)
	}
	if man.Layers[0].Size > maxArchive {
		return nil, fmt.Errorf("oci: %s: the archive is %d bytes; the limit is %d", ref, man.Layers[0].Size, maxArchive)
	}
	archive, err := content.FetchAll(ctx, repo, man.Layers[0])
	if err != nil {
		return nil, fmt.Errorf("oci: %s: %w", ref, err)
	}
	p := &Pulled{Digest: desc.Digest.String(), Archive: archive}
	timeout := o.ReferrersTimeout
	if timeout <= 0 {
		timeout = DefaultReferrersTimeout
	}
	// A registry that pages, or answers, without end must not hold a pull
	// (or a host's start-up) for ever.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.Signatures, err = signatures(ctx, repo, desc); err != nil {
		return nil, fmt.Errorf("oci: %s: signatures: %w", ref, err)
	}
	if len(p.Signatures) == 0 {
		// A registry may answer the referrers API while the signature
		// was pushed under the fallback tag (sha256-<digest>): look there
		// too.
		fallback, _, _ := repository(ref, o)
		if err := fallback.SetReferrersCapability(false); err == nil {
			if p.Signatures, err = signatures(ctx, fallback, desc); err != nil {
				return nil, fmt.Errorf("oci: %s: signatures: %w", ref, err)
			}
		}
	}
	return p, nil
}

// signatures fetches the signature artifacts that refer to desc: at most
// maxReferrers of them, each manifest and layer within its bound before a
// byte of it is fetched; one that is not a signature artifact is passed
// over.
func signatures(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor) ([][]byte, error) {
	var out [][]byte
	seen := 0
	err := repo.Referrers(ctx, desc, SignatureArtifactType, func(refs []ocispec.Descriptor) error {
		for _, d := range refs {
			if seen++; seen > maxReferrers {
				return fmt.Errorf("more than %d signature referrers; the limit is %d", maxReferrers, maxReferrers)
			}
			if d.MediaType != ocispec.MediaTypeImageManifest || d.Size <= 0 || d.Size > maxSignatureManifest {
				continue
			}
			sraw, err := content.FetchAll(ctx, repo, d)
			if err != nil {
				return err
			}
			var sm ocispec.Manifest
			if json.Unmarshal(sraw, &sm) != nil || len(sm.Layers) != 1 || sm.Layers[0].MediaType != SignatureMediaType || sm.Layers[0].Size <= 0 || sm.Layers[0].Size > maxSignature {
				continue
			}
			sig, err := content.FetchAll(ctx, repo, sm.Layers[0])
			if err != nil {
				return err
			}
			out = append(out, sig)
		}
		return nil
	})
	return out, err
}

// fileInArchive returns one file of a toolpack archive, nil when absent.
func fileInArchive(archive []byte, name string) ([]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("oci: not a toolpack archive: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("oci: not a toolpack archive: %w", err)
		}
		if h.Name == name {
			return io.ReadAll(io.LimitReader(tr, 64<<10))
		}
		if !strings.HasPrefix(h.Name, "toolpack.json") {
			return nil, nil // the index and signature come first
		}
	}
}
