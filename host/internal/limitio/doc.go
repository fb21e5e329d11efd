// Package limitio holds the capped writers the runners use for a guest's
// output and logs: [Writer] keeps at most a fixed number of bytes and
// reports the overflow (OUTPUT_LIMIT), [Lines] splits a stream into log
// lines under a total byte budget and marks the truncation.
//
// Both are safe for concurrent use.
package limitio
