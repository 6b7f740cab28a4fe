// Package filter is the contract between an SSTable and the filter it
// carries: a Policy builds one kind of filter from the hashes of a table's
// user keys and decodes it when the table is opened. The bloom, fuse and
// ribbon packages implement it; shale.BloomFilter, FuseFilter and
// RibbonFilter choose among them (shale.TableFilter is sealed to the formats
// shale can read back, so a Policy written elsewhere cannot be plugged in).
package filter

import (
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Hash is the one hash every filter in shale is built from: xxhash64 of
// the user key. A point lookup computes it once and probes each candidate
// file's filter with it.
func Hash(userKey []byte) uint64 { return xxhash.Sum64(userKey) }

// HashList collects the hashes a filter writer is given. It drops a hash
// equal to the one just before it: a table adds its keys in order, so the
// versions of one user key arrive back to back and count once.
//
// A list starts from the memory of one that was released, if any: a
// compaction writes table after table, each with a list about as long as
// the last, and regrowing each from nothing was 70% of the bytes a
// 10M-key fill allocated, which made the collector run twice as often.
type HashList []uint64

// hashLists holds released lists' memory, for new lists to start from.
var hashLists sync.Pool

// Add appends h unless it repeats the last hash added.
func (l *HashList) Add(h uint64) {
	n := len(*l)
	if n > 0 && (*l)[n-1] == h {
		return
	}
	if *l == nil {
		if p, ok := hashLists.Get().(*HashList); ok {
			*l = (*p)[:0]
		}
	}
	*l = append(*l, h)
}

// Release empties the list and gives its memory to later lists. A filter
// writer calls it once its filter is built and the hashes are no longer
// needed.
func (l *HashList) Release() {
	if cap(*l) > 0 {
		p := new(HashList)
		*p = (*l)[:0]
		hashLists.Put(p)
	}
	*l = nil
}

// Policy builds and decodes one kind of per-table filter. Its Name is
// written into each table's metaindex, so a reader picks the decoder by name
// and a table whose filter it does not know is read without filter skips.
// The encoded filter carries its own parameters (bits per key, probes), so
// one policy decodes filters written at any setting.
type Policy interface {
	// Name identifies the format, e.g. "shale.bloom.v1". Stable forever.
	Name() string
	// NewWriter returns a writer that builds one filter.
	NewWriter() Writer
	// Decode checks data and returns a filter that probes it in place.
	// Malformed data gives an error that matches shale.ErrCorruption.
	Decode(data []byte) (Filter, error)
}

// Writer collects the hashes of one table's user keys.
type Writer interface {
	// AddHash adds the Hash of a user key. Adding the same hash
	// twice in a row (versions of one key arrive together) costs nothing
	// extra in the result.
	AddHash(h uint64)
	// Finish returns the encoded filter, or an error when no filter of
	// this kind can be built for the keys added (a table is then written
	// without a filter). The writer is not used afterwards.
	Finish() ([]byte, error)
}

// Filter answers "may this table hold the key?" with no false negatives.
type Filter interface {
	// MayContain reports false only when the key with hash h was never added.
	MayContain(h uint64) bool
}
