// Package manifest parses and validates *.tool.json manifests (SPEC §2–3).
package manifest
