package sstable

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shale-db/shale/internal/base"
	"github.com/shale-db/shale/internal/rangedel"
)

// Properties describe a table; the Writer computes them and stores them in
// the properties block (see the format description in writer.go).
type Properties struct {
	NumEntries   uint64 // entries, deletions included
	NumDeletions uint64 // entries of kind KindDelete
	NumUserKeys  uint64 // distinct user keys: the keys the filter holds
	// NumPrefixes counts the prefixes the filter holds besides the keys
	// (see PrefixExtractor); 0 without a prefix extractor.
	NumPrefixes uint64
	// NumRangeDels counts the range tombstones: the (fragment, seqnum)
	// pairs of the range-deletion block.
	NumRangeDels uint64
	// Smallest and Largest bound the table's keys, its range tombstones
	// included: the first and last entries, or a tombstone's start (with
	// its seqnum and KindRangeDelete) and base.RangeDelSentinel of a
	// tombstone's end when those lie further out. Zero when the table is
	// empty.
	Smallest, Largest       base.InternalKey
	SmallestSeq, LargestSeq base.SeqNum
	RawKeySize              uint64 // sum of the encoded internal key lengths
	RawValueSize            uint64 // sum of the value lengths
	DataSize                uint64 // bytes of the data blocks as stored, trailers included
	IndexSize               uint64 // bytes of the index block, uncompressed
	FilterSize              uint64 // bytes of the filter; 0 without one
	NumDataBlocks           uint64
	FilterPolicy            string // the filter policy's name; "" without one
	// FilterError says why the table has no filter although its writer
	// was given a policy: the policy's name and the error building it.
	FilterError string
	// PrefixExtractor names the prefix extractor whose prefixes the filter
	// holds; "" when it holds keys only.
	PrefixExtractor string
	// Compression is how the writer was told to compress the table's
	// blocks: "snappy", "none" or "zstd" (Compression.String); each block
	// says how it is actually stored, raw when compressing did not pay.
	Compression   string
	FormatVersion uint32
}

// FilterBitsPerKey is the filter's measured size per entry it holds, the
// distinct user keys and the prefixes: FilterSize*8 / (NumUserKeys +
// NumPrefixes) (0 for an empty table or no filter).
func (p *Properties) FilterBitsPerKey() float64 {
	n := p.NumUserKeys + p.NumPrefixes
	if n == 0 {
		return 0
	}
	return float64(p.FilterSize) * 8 / float64(n)
}

// String lists the properties one per line, for people and tests.
func (p *Properties) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "entries: %d (%d deletions, %d user keys)\n", p.NumEntries, p.NumDeletions, p.NumUserKeys)
	if p.NumRangeDels > 0 {
		fmt.Fprintf(&b, "range tombstones: %d\n", p.NumRangeDels)
	}
	if !p.empty() {
		fmt.Fprintf(&b, "keys: %s - %s\n", p.Smallest, p.Largest)
		fmt.Fprintf(&b, "seqnums: %d - %d\n", p.SmallestSeq, p.LargestSeq)
	}
	fmt.Fprintf(&b, "raw sizes: keys %d, values %d\n", p.RawKeySize, p.RawValueSize)
	fmt.Fprintf(&b, "data blocks: %d, %d bytes\n", p.NumDataBlocks, p.DataSize)
	fmt.Fprintf(&b, "index: %d bytes\n", p.IndexSize)
	if p.FilterPolicy != "" {
		fmt.Fprintf(&b, "filter: %s, %d bytes, %.2f bits/key\n", p.FilterPolicy, p.FilterSize, p.FilterBitsPerKey())
		if p.PrefixExtractor != "" {
			fmt.Fprintf(&b, "prefixes: %d, of %s\n", p.NumPrefixes, p.PrefixExtractor)
		}
	} else if p.FilterError != "" {
		fmt.Fprintf(&b, "filter: none (%s)\n", p.FilterError)
	} else {
		b.WriteString("filter: none\n")
	}
	if p.Compression != SnappyCompression.String() {
		fmt.Fprintf(&b, "compression: %s\n", p.Compression)
	}
	fmt.Fprintf(&b, "format version: %d\n", p.FormatVersion)
	return b.String()
}

// addRangeDelBounds accounts for a table's range tombstones: their count,
// their seqnums, the bounds they extend (see the format) and the format
// version they need. The properties hold the point entries already.
func (p *Properties) addRangeDelBounds(s rangedel.Spans) {
	if len(s) == 0 {
		return
	}
	wasEmpty := p.NumEntries == 0
	p.FormatVersion = max(p.FormatVersion, formatVersionRangeDels)
	p.NumRangeDels = uint64(s.Count())
	lo, hi := s.SeqRange()
	first, last := s[0], s[len(s)-1]
	start := base.MakeInternalKey(first.Start, first.Seqs[0], base.KindRangeDelete)
	end := base.RangeDelSentinel(last.End)
	if wasEmpty {
		p.Smallest, p.Largest = start.Clone(), end.Clone()
		p.SmallestSeq, p.LargestSeq = lo, hi
		return
	}
	if base.Compare(start, p.Smallest) < 0 {
		p.Smallest = start.Clone()
	}
	if base.Compare(end, p.Largest) > 0 {
		p.Largest = end.Clone()
	}
	p.SmallestSeq, p.LargestSeq = min(p.SmallestSeq, lo), max(p.LargestSeq, hi)
}

// empty reports whether the table holds neither an entry nor a tombstone.
func (p *Properties) empty() bool { return p.NumEntries == 0 && p.NumRangeDels == 0 }

// numbers names p's numeric properties.
func (p *Properties) numbers() map[string]*uint64 {
	return map[string]*uint64{
		"data-size":       &p.DataSize,
		"filter-size":     &p.FilterSize,
		"index-size":      &p.IndexSize,
		"largest-seq":     (*uint64)(&p.LargestSeq),
		"num-data-blocks": &p.NumDataBlocks,
		"num-deletions":   &p.NumDeletions,
		"num-entries":     &p.NumEntries,
		"num-prefixes":    &p.NumPrefixes,
		"num-range-dels":  &p.NumRangeDels,
		"num-user-keys":   &p.NumUserKeys,
		"raw-key-size":    &p.RawKeySize,
		"raw-value-size":  &p.RawValueSize,
		"smallest-seq":    (*uint64)(&p.SmallestSeq),
	}
}

// encode returns the contents of the properties block.
func (p *Properties) encode() []byte {
	props := map[string][]byte{
		"format-version": binary.AppendUvarint(nil, uint64(p.FormatVersion)),
	}
	for name, v := range p.numbers() {
		props[name] = binary.AppendUvarint(nil, *v)
	}
	if p.NumRangeDels == 0 {
		// A version 1 table is written as before range deletions.
		delete(props, "num-range-dels")
	}
	if p.PrefixExtractor == "" {
		// A table without prefixes is written as before prefix filters.
		delete(props, "num-prefixes")
	} else {
		props["prefix-extractor"] = []byte(p.PrefixExtractor)
	}
	if p.FilterPolicy != "" {
		props["filter-policy"] = []byte(p.FilterPolicy)
	}
	if p.FilterError != "" {
		props["filter-error"] = []byte(p.FilterError)
	}
	if p.Compression != "" && p.Compression != SnappyCompression.String() {
		// A snappy table, the default, is written as before the property.
		props["compression"] = []byte(p.Compression)
	}
	if !p.empty() {
		props["smallest"] = p.Smallest.Append(nil)
		props["largest"] = p.Largest.Append(nil)
	}
	bw := blockWriter{restartInterval: 16}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		bw.add([]byte(name), props[name])
	}
	return bw.finish()
}

// decodeProperties decodes a properties block read from offset off of file.
func decodeProperties(file string, off int64, data []byte) (*Properties, error) {
	var it blockIter
	if err := it.init(file, off, data); err != nil {
		return nil, err
	}
	p := &Properties{Compression: SnappyCompression.String()}
	numbers := p.numbers()
	for valid := it.First(); valid; valid = it.Next() {
		name, v := string(it.key), it.val
		var bad bool
		switch name {
		case "filter-policy":
			p.FilterPolicy = string(v)
		case "filter-error":
			p.FilterError = string(v)
		case "prefix-extractor":
			p.PrefixExtractor = string(v)
		case "compression":
			p.Compression = string(v)
		case "smallest", "largest":
			k, ok := base.DecodeInternalKey(v)
			bad = !ok
			if name == "smallest" {
				p.Smallest = k.Clone()
			} else {
				p.Largest = k.Clone()
			}
		case "format-version":
			n, ok := uvarintExact(v)
			bad = !ok || n > 1<<32-1
			p.FormatVersion = uint32(n)
		default:
			if dst := numbers[name]; dst != nil {
				var good bool
				*dst, good = uvarintExact(v)
				bad = !good
			}
		}
		if bad {
			return nil, base.CorruptionErrorf(file, off, "bad value %q for property %s", v, name)
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	return p, nil
}

// uvarintExact decodes b, which must be exactly one uvarint.
func uvarintExact(b []byte) (uint64, bool) {
	v, n := binary.Uvarint(b)
	return v, n > 0 && n == len(b)
}
