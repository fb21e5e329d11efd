package host

import "github.com/agenthost/agenthost/host/cache"

// DefaultCacheMaxBytes is the size the host's cache is trimmed to when a
// host starts (in the background; Close waits for it) and
// Options.CacheMaxBytes is 0.
const DefaultCacheMaxBytes int64 = 4 << 30

// capCache trims the cache folder to Options.CacheMaxBytes, least recently
// used entries first. It is best effort: a failure is logged, never fatal,
// since everything in the cache can be rebuilt.
func (h *Host) capCache() {
	max := h.opts.CacheMaxBytes
	if max == 0 {
		max = DefaultCacheMaxBytes
	}
	if max < 0 {
		return
	}
	removed, err := cache.Prune(h.opts.CacheDir, cache.PruneOptions{MaxBytes: max})
	if err != nil {
		h.log.Warn("cache size cap", "error", err)
	}
	if len(removed) > 0 {
		h.log.Info("cache over its size cap: evicted least recently used entries", "entries", len(removed), "maxBytes", max)
	}
}
