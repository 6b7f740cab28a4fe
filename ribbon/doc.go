// Package ribbon builds and probes Ribbon filters (Dillinger and Walzer,
// "Ribbon filter: practically smaller than Bloom and Xor", 2021; RocksDB's
// NewRibbonFilterPolicy): static filters at any bits per key, as a table
// filter (NewPolicy, format "shale.ribbon.v1", ribbon.go has it byte by
// byte) and standalone (Filter).
//
// A filter of n keys has m ≈ 1.1·n slots; each key has a start slot and 64
// pseudo-random coefficients over the 64 slots from there, and r
// fingerprint bits. Building it solves the linear system over GF(2) that
// makes, for every key and every column j (a bit of every slot), the
// parity of the key's coefficients AND column j's solution bits equal bit
// j of its fingerprint. The system is banded (each row spans 64 slots), so
// Gaussian elimination costs a few word operations a key, done as the keys
// arrive (build.go). A key never added matches a column with probability
// 1/2, so r columns give a rate of 2^-r; storing some blocks with one
// column more than others gives any bits per key in between.
//
// The system may have no solution for a seed (a row that eliminates to
// zero against a different fingerprint); the build then tries another
// seed, up to 32, giving the system more slots every 4. A set whose build
// fails anyway (ErrBuildFailed: not seen outside a test that gives it fewer
// slots than keys) gets, from the table writer, the filter that holds
// every key, which is never wrong.
//
// # Memory against Bloom filters
//
// The claim that a Ribbon filter takes about 30% less memory than a
// textbook Bloom filter of the same rate is tested by
// TestMemoryAgainstBloom, at 7, 10 and 14 bits per key: 22-24% less than a
// textbook Bloom filter, 25-31% less than shale's blocked one. The claim
// holds against a cache-local Bloom filter (RocksDB's documentation
// compares with its own, which is one), not against the textbook layout:
// for a rate p, a textbook filter needs log2(1/p)/ln 2 = 1.44·log2(1/p)
// bits a key and a Ribbon filter (1+ε)·log2(1/p), ε being the slack, so
// the saving is 1 - (1+ε)/1.44, 30.7% at best, with no slack at all. This
// filter's band is 64 slots wide and needs ε of about 9% at 1,000 keys and
// 11% at 1M (slack in ribbon.go). A band of 128 slots, as RocksDB's
// Standard128Ribbon has, needs less slack, at the cost of 128-bit
// arithmetic in every probe and build step; it was not tried here.
//
// # Measurements
//
// Filters of 1M (2^20) random keys, the same keys for all, probed by item
// (so every probe hashes its key: about 5 ns of each figure), on a shared
// 2-core machine (bench_test.go, BenchmarkCompareBuild and
// BenchmarkCompareProbe). The bits per key and false-positive rates are
// exact counts; the times are not: the machine was shared with other
// processes, several times over, and times moved by 2x or more from run to
// run, so only their order of magnitude is meaningful.
//
//	TABLE
package ribbon
