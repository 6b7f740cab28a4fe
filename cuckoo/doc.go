// Package cuckoo is a cuckoo filter (Fan, Andersen, Kaminsky and
// Mitzenmacher, CoNEXT 2014) for use outside the engine: a set of items
// with Add, MayContain and Remove, in buckets of four fingerprints of 4 to
// 16 bits (cuckoo.go has the format byte by byte).
//
// It is the filter to pick for a set with deletions: bloom.Counting
// removes too, but with a 4-bit counter where a Bloom filter has a bit, 4
// times the memory. New plans a load of 95%; the first Add to fail comes
// at 96-97% (TestLoadBeforeFull, at 1,000 and 100,000 items).
//
// # Measurements
//
// 1M (2^20) random items, the same for all, in one run (bench_test.go,
// BenchmarkOps): the Bloom and counting filters sized for 0.95%, the
// cuckoo filters for 1M items. The bits per item and rates are exact
// counts; the times are CPU time per operation, the smallest of 3 runs, on
// a 2-core machine running about 19 threads at once (see ribbon/doc.go for
// what that does to them: only their ratios mean much):
//
//	filter             bits/item  false positives  add ns  probe ns, present / absent  remove ns
//	bloom.New             10.02      0.954%           21       22 / 32                     -
//	bloom.NewCounting     40.08      0.954%           48       42 / 51                    74
//	cuckoo, 8-bit          8.42      2.93%            60       49 / 40                    62
//	cuckoo, 12-bit        12.63      0.187%           70       52 / 39                    63
//	cuckoo, 16-bit        16.84      0.0114%          81       64 / 45                    65
//
// The 12-bit cuckoo filter has a fifth of the counting filter's false
// positives in a third of its memory, and removes a little faster. Its rate
// is about 8·load/(2^f-1): 10-bit fingerprints (10.5 bits per item) would
// give 0.74%, below the counting filter's rate in a quarter of its memory.
// An Add costs about 3 times a Bloom filter's, more as the load nears full
// (a fingerprint may move many times), and a cuckoo filter cannot grow: an
// Add past its capacity fails with ErrFull where a Bloom filter would just
// get worse.
//
// As a table filter it is not worth it: a table never removes a key, and
// for a static set the Ribbon filter (package ribbon) is smaller at every
// rate (0.19% costs it 10 bits per key, 12.6 here) and the binary fuse
// filter (package fuse) is smaller and faster at 0.38%.
//
//	go test -run '^$' -bench Ops -benchtime 1000000x -count 3 ./cuckoo/
package cuckoo
