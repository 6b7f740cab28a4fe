package base

// Mix64 is the 64-bit finalizer of MurmurHash3: a bijection whose every
// output bit depends on every input bit. The filters that retry their build
// with another seed (fuse, ribbon) hash a key as Mix64(h + seed), which
// gives each seed its own independent-looking hash of the key.
func Mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// FilterSeed returns the seed of a filter build's attempt-th attempt (from
// 0). Seeds are fixed, so the same keys always give the same bytes.
func FilterSeed(attempt int) uint64 { return Mix64(uint64(attempt) + 0x9e3779b97f4a7c15) }
