// Package fuse builds and probes binary fuse filters (Graf and Lemire,
// "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022) with
// 8-bit fingerprints, as a per-table filter: NewPolicy, format
// "shale.fuse8.v1" (fuse.go has it byte by byte).
//
// A fuse filter stores one byte per slot in an array of about 1.125 slots
// a key. Each key has three slots, in three consecutive segments of the
// array, and the filter is built so that the XOR of a key's three slots is
// its 8-bit fingerprint; a key never added matches with probability 1/256.
// Building it means solving that system, by peeling (see builder.build),
// which can fail; a failed attempt is retried with another seed. The
// filter is static: it is built once from all of a table's keys, which is
// how a table's filter is made anyway.
//
// Against the Bloom filter the engine uses by default (package bloom, 10
// bits per key), for 1M (2^20) keys, probed through tablefilter.Filter with
// precomputed hashes; medians of 5 runs, random keys / sequential keys
// ("key%010d"), on a shared 2-core AMD EPYC:
//
//	filter           bits/key  fp random  fp seq   build ns/key  ns present  ns absent
//	fuse8              9.00    0.380%     0.384%       73        10.4 / 11.2 10.2 / 10.9
//	bloom, 10 b/key   10.00    0.951%     0.965%       20        15.7 / 13.7 19.1 / 18.9
//
// The fuse filter is smaller, its false-positive rate is 2.5 times lower
// (a blocked Bloom filter needs 12.1 bits per key for 0.39%), and its probe
// is faster: three independent loads and one comparison, with no early exit
// to mispredict. It costs more to build, 3.5 times the Bloom filter's time
// and about 40 bytes of scratch memory a key, and its size follows from
// the number of keys: 9.0 bits per key from about 1M keys up, 9.5 at
// 100,000, 10.2 at 10,000, 11.3 at 1,000.
//
//	go test -run '^$' -bench 'Probe' -benchtime 2000000x -count 5 ./fuse/
//	go test -run '^$' -bench 'Build' -benchtime 10x -count 5 ./fuse/
package fuse
