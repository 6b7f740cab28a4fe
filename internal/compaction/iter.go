package compaction

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
)

// Iter reads the merged inputs of a compaction and yields the entries to
// write, in internal-key order: a subsequence of its input.
//
// The live snapshots split sequence numbers into stripes: with snapshots
// s[0] < s[1] < ... < s[n-1], stripe 0 holds seqnums <= s[0], stripe i holds
// s[i-1] < seqnum <= s[i], and stripe n the seqnums above s[n-1]. A read at
// s[i] sees, of each user key, the newest version in stripes 0 to i; the
// latest read sees the newest of all. So of each user key's versions, only
// the newest in each stripe can ever be read: Iter keeps those and drops the
// rest.
//
// A tombstone that is the newest version of its key in stripe 0 is dropped
// too when elideTombstone(ukey) says no level below the output can hold the
// key: every read that sees it finds nothing, and without it finds nothing
// as well, since the older versions it hid in this compaction are dropped
// with it and there is nothing deeper. A tombstone in a higher stripe stays:
// it hides, from the snapshots above it, a version a lower snapshot needs.
//
// A version deleted by a range tombstone of the compaction (one newer than
// it in its own stripe) is dropped as well: every read that sees the
// version sees the tombstone. The tombstones themselves are written
// separately (CompactTombstones).
type Iter struct {
	input      base.InternalIterator
	tombstones rangedel.Spans
	snapshots  []base.SeqNum
	elide      func(ukey []byte) bool

	// The last input entry looked at: its user key (a copy), trailer and
	// stripe. started is false before the first entry (the empty user key
	// is a valid key, so ukey cannot say).
	ukey    []byte
	trailer uint64
	stripe  int
	started bool

	err error
}

// NewIter returns an iterator over the entries of input that a compaction
// must write. tombstones are the range tombstones of the compaction's
// inputs, fragmented. snapshots are the sequence numbers of the live
// snapshots, ascending. elideTombstone reports whether no level below the
// compaction's output can hold a user key (IsBaseLevelForKey); nil means
// never. The Iter owns input and closes it on Close.
func NewIter(input base.InternalIterator, tombstones rangedel.Spans, snapshots []base.SeqNum, elideTombstone func(ukey []byte) bool) *Iter {
	return &Iter{input: input, tombstones: tombstones, snapshots: snapshots, elide: elideTombstone}
}

// First moves to the first entry to write. It returns false when there is
// none, or on an error (see Error).
func (i *Iter) First() bool {
	i.started, i.err = false, nil
	return i.settle(i.input.First())
}

// Next moves to the next entry to write. It returns false at the end, or on
// an error (see Error).
func (i *Iter) Next() bool {
	if i.err != nil {
		return false
	}
	return i.settle(i.input.Next())
}

// settle steps the input over the entries to drop, starting with the one it
// is on; ok is whether it is on one.
func (i *Iter) settle(ok bool) bool {
	for ; ok; ok = i.input.Next() {
		k := i.input.Key()
		if err := i.check(k); err != nil {
			i.err = err
			return false
		}
		if i.keep(k) {
			return true
		}
	}
	i.err = i.input.Error()
	return false
}

// check returns an error if k cannot follow the previous input entry or is
// of an unknown kind: writing it out would make a table that is corrupt, or
// loses data. An entry equal to the previous one is a harmless duplicate;
// keep drops it.
func (i *Iter) check(k base.InternalKey) error {
	if k.Kind() > base.KindMax {
		return fmt.Errorf("%w: compaction input %s has an unknown kind", base.ErrCorruption, k)
	}
	if i.started {
		c := bytes.Compare(k.UserKey, i.ukey)
		if c < 0 || c == 0 && k.Trailer > i.trailer {
			prev := base.InternalKey{UserKey: i.ukey, Trailer: i.trailer}
			return fmt.Errorf("%w: compaction input out of order: %s after %s", base.ErrCorruption, k, prev)
		}
	}
	return nil
}

// keep decides whether the input entry k is written, and records it as the
// last entry looked at.
func (i *Iter) keep(k base.InternalKey) bool {
	stripe, _ := slices.BinarySearch(i.snapshots, k.SeqNum())
	sameKey := i.started && bytes.Equal(k.UserKey, i.ukey)
	i.trailer = k.Trailer
	if sameKey && stripe == i.stripe {
		return false // a newer version in the same stripe shadows it
	}
	if !sameKey {
		i.ukey = append(i.ukey[:0], k.UserKey...)
		i.started = true
	}
	i.stripe = stripe
	if coveredInStripe(i.tombstones, i.snapshots, k, stripe) {
		return false
	}
	return !(stripe == 0 && k.Kind() == base.KindDelete && i.elide != nil && i.elide(k.UserKey))
}

// Key returns the current entry's key, valid until the next move.
func (i *Iter) Key() base.InternalKey { return i.input.Key() }

// Value returns the current entry's value, valid until the next move.
func (i *Iter) Value() []byte { return i.input.Value() }

// Error returns the error that stopped the iteration: the input's, or a
// corruption error for input that is out of order or of an unknown kind.
func (i *Iter) Error() error { return i.err }

// Close closes the input. It returns the iteration's error, if any, or else
// the input's.
func (i *Iter) Close() error {
	err := i.input.Close()
	if i.err != nil {
		return i.err
	}
	return err
}
