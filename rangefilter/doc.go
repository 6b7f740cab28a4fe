// Package rangefilter answers "may any key lie in [lo, hi]?" for a fixed
// set of keys, with no false negatives and a false-positive probability
// bounded whatever the keys and the queries: the range analogue of a Bloom
// filter, for short scans that want to skip a file without reading it.
//
// It implements Grafite (Costa, Ferragina and Vinciguerra, "Grafite: Taming
// Adversarial Queries with Optimal Range Filters", SIGMOD 2024). A Bloom
// filter hashes each key to random bits, which destroys order, so it can
// only answer a range by asking for every value in it. Grafite hashes with
// a locality-preserving hash instead: the integer universe is cut into
// blocks of r values, and key x gets the code (q(x/r) + x mod r) mod r,
// where q is a random pairwise-independent hash of the block number. Within
// a block, codes keep the keys' distances, so a query range [lo, hi] maps
// to one interval of codes (two when it straddles a block boundary, or
// wraps); keys of other blocks land at random offsets. The filter stores
// the sorted codes compactly (Elias-Fano: about 2 + log2(r/n) bits per
// key) and answers whether any code lies in the query's interval.
//
// With r = n*2^(B-2) for n keys, the codes take B bits per key, and a query
// of L values is a false positive with probability at most L/2^(B-2): only
// keys of other blocks can collide with the interval, each with
// probability L/r. Unlike heuristic range filters (SuRF, Rosetta), this
// holds for queries correlated with the keys, such as a range starting just
// after a present key: that key's code sits just below the query's
// interval, never in it. A query wider than r values answers "maybe".
//
// Filter works on uint64 keys. For byte-string keys, KeyMap maps a key set
// densely and in order to integers (decimal keys to their numeric value),
// UserMap takes a caller's map for keys that are numbers already, and
// Builder and KeyFilter put map and filter together, as shale's tables
// store them.
package rangefilter
