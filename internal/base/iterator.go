package base

// InternalIterator walks internal keys in order. Memtables, SSTables, the
// merging iterator and compaction all speak it.
//
// Positioning methods return whether the iterator is now on an entry (the
// same as Valid afterwards). Seeks take user keys: SeekGE lands on the first
// entry whose user key is >= key (its newest version), SeekLT on the last
// entry whose user key is < key (its oldest version). Key and Value stay
// valid until the next positioning call; callers copy what they keep.
//
// An iterator that meets an error becomes invalid and reports it from Error;
// Close also returns it.
type InternalIterator interface {
	First() bool
	Last() bool
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
	Next() bool
	Prev() bool
	Valid() bool
	Key() InternalKey
	Value() []byte
	Error() error
	Close() error
}
