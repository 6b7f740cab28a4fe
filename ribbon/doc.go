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
// seed, up to 32, giving the system more slots every 4. A build that fails
// anyway returns ErrBuildFailed (not seen outside a test that gives it
// fewer slots than keys), and the table is written without a filter.
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
// Filters of 1M (2^20) random keys, the same keys for all, in one run
// (bench_test.go: BenchmarkCompareBuild and BenchmarkCompareProbe). Every
// build and probe takes the item and hashes it, which costs each figure
// the same few ns. The bits per key and false-positive rates are exact
// counts. The times are CPU time per key or probe (filtertest.CPUTimer),
// the smallest of 3 runs: the machine, 2 cores, was running about 19
// threads at once, which made the wall-clock ns/op 2-20 times these and
// useless; CPU time leaves out the waiting but still pays for the cache
// the other processes take, so these are above what a quiet machine
// shows (bloom/doc.go has 14.7 / 19.7 ns for a probe of the blocked Bloom
// filter with the hash given) and only their ratios mean much.
//
//	filter                 bits/key  false positives  build ns/key  probe ns, present / absent
//	blocked Bloom, 10         10.00     0.951%              25        24 / 40
//	counting Bloom, 0.96%     39.98     0.961%              58        57 / 84
//	cuckoo, 8-bit              8.42     2.93%               72        58 / 47
//	cuckoo, 12-bit            12.63     0.187%              82        69 / 56
//	cuckoo, 16-bit            16.84     0.0114%             87        77 / 65
//	binary fuse, 8-bit         9.00     0.380%              99        23 / 27
//	Ribbon, 7                  7.00     1.32%               80        63 / 65
//	Ribbon, 10                10.00     0.192%              96        77 / 67
//	Ribbon, 14                14.00     0.0154%            112       109 / 78
//
// At 10 bits per key, the Ribbon filter has 5 times fewer false positives
// than the Bloom filter; at 7 (1.32%) it has the rate of a blocked Bloom
// filter of 9.3 bits per key (TestMemoryAgainstBloom). Its build costs about 4 times the Bloom filter's and its
// probe about 3 times (a present key is checked against every column, 9
// or 10 at 10 bits per key, two words each). Against the fuse filter: at
// 10 bits per key, 2 times fewer false positives for 11% more memory, and
// a probe 3 times slower.
//
//	go test -run '^$' -bench CompareBuild -benchtime 2x -count 3 ./ribbon/
//	go test -run '^$' -bench CompareProbe -benchtime 2000000x -count 3 ./ribbon/
package ribbon
