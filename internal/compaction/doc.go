// Package compaction holds the logic of leveled compaction, apart from any
// file: the DB opens and writes the SSTables and installs the results.
//
// It has two parts (the DB reads a compaction's inputs as one through
// package merging):
//
//   - The picker (Pick, Scores) decides which files to merge next and
//     into which level, from a manifest.Version alone.
//   - The compaction iterator (NewIter) reads the merged inputs of a
//     compaction and yields only the entries worth writing again: the newest
//     version of each user key, the versions live snapshots still see, and
//     the tombstones that still hide something.
package compaction
