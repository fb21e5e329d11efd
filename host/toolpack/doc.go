// Package toolpack makes a toolpack folder something a reviewer can sign
// and a host can verify: an index (toolpack.json) holding the SHA-256 of
// every file, an SSH signature of that index (toolpack.json.sig, the
// format of `ssh-keygen -Y sign` with the namespace agenthost-toolpack),
// an allowed-signers list of trusted keys, and a reproducible .tar.gz.
//
// Verification checks the signature, that its key is trusted for the
// namespace, and that the folder holds exactly the indexed files with
// their digests: a file added, changed or removed after signing is an
// error naming it.
//
// An archive is read index first: its signature is checked before any
// file is inflated, and only indexed files, each of its indexed size and
// digest, are unpacked, under a cap on their sum.
package toolpack
