// Package cuckoo is a cuckoo filter (Fan, Andersen, Kaminsky and
// Mitzenmacher, CoNEXT 2014) for use outside the engine: a set of items
// with Add, MayContain and Remove, in buckets of four fingerprints of 4 to
// 16 bits (cuckoo.go has the format byte by byte).
//
// It is the filter to pick for a set with deletions: bloom.Counting
// removes too, but with a 4-bit counter where a Bloom filter has a bit, 4
// times the memory. Filters sized for 100,000 items and filled to them
// (New plans a load of 95%; the first Add to fail comes at 96-97%,
// TestLoadBeforeFull):
//
//	fingerprint  bits/item  false positives
//	 8 bits        8.42       2.94%
//	12 bits       12.63       0.19%
//	16 bits       16.84       0.012%
//
// (bench_test.go measures them at 1M items beside bloom.Filter and
// bloom.Counting.)
//
// As a table filter it is not worth it: a table never removes a key, and
// for a static set the Ribbon filter (package ribbon) is smaller at every
// rate (0.19% costs it about 10 bits per key, 12.6 here) and the binary
// fuse filter (package fuse) is smaller and faster at 0.39%.
package cuckoo
