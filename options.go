package shale

import (
	"fmt"

	"github.com/shale-db/shale/rangefilter"
	"github.com/shale-db/shale/vfs"
)

// NoFilter, as Options.BloomBitsPerKey, writes SSTables without a filter.
const NoFilter = -1

// Options configure a DB. The zero value of every field means its default.
type Options struct {
	// MemTableSize is the number of bytes a memtable holds before it is
	// flushed. 0: 4 MiB.
	MemTableSize int
	// BloomBitsPerKey is the filter bits per key in new SSTables. 0: 10;
	// NoFilter: none written. FilterPolicy, when set, takes precedence.
	BloomBitsPerKey int
	// BlockCacheSize is the bytes of uncompressed blocks cached. 0: 8 MiB;
	// negative: no block cache.
	BlockCacheSize int
	// RowCacheSize is the bytes of rows cached: for each table and key, what
	// a lookup in that table found (a value, a deletion, or nothing), so a
	// repeated lookup reads no block. Reads at a snapshot older than a
	// table's newest entry bypass it. 0: no row cache.
	RowCacheSize int
	// NoSync: writes are not fsynced. They survive a process crash, not a
	// power loss.
	NoSync bool
	// DisableWALMapping writes the WAL with a write(2) per commit group
	// instead of storing the groups through a shared memory mapping of the
	// file, which the DB does where the file system supports it (Linux,
	// with fallocate and shared writable mappings; elsewhere the WAL is
	// written): a mapped group costs no system call, and a process crash
	// keeps it all the same, since its pages are the kernel's. On a
	// copy-on-write file system (btrfs, ZFS) a store into an allocated
	// block may still find no space, which the DB reports as an error,
	// as it does a failed write. A process at its limit of mappings
	// (vm.max_map_count) writes the rest of a WAL whose window the kernel
	// refuses with pwrite(2), and maps the next one again. See
	// docs/design.md, "The mapped WAL".
	DisableWALMapping bool

	// MaxOpenFiles bounds the table files the DB holds open for reading
	// (LevelDB's max_open_files): past it, the least recently read table's
	// file is closed and opened again when next read, which costs that
	// read an open(2). Filters and indexes stay in memory whatever the
	// bound. Besides these the DB holds its LOCK, WAL and MANIFEST open,
	// and the tables a flush or compaction is writing. 0: 10,000, or half
	// the process's descriptor limit (RLIMIT_NOFILE) when that is less, but
	// at least 64; 1,000 if the limit cannot be read.
	//
	// The default keeps every table of a 100M-key store (about 6,000
	// tables of 2 MiB) open, so that reads at that scale pay no reopens,
	// where the limit allows: Go raises the soft RLIMIT_NOFILE to the hard
	// limit at startup, 524,288 or more on common Linux systems, but some
	// systems cap it at 4,096 or less, and running out of descriptors
	// would stop the store. Half leaves the rest to the WAL, the MANIFEST,
	// the tables being written and the rest of the program. LevelDB's and
	// Pebble's 1,000 date from soft limits of 1,024; set a lower bound when
	// the process shares its limit with many stores.
	MaxOpenFiles int
	// DisableMmapReads reads tables with pread(2) only. By default the
	// data blocks of Gets and iterators are read through a read-only
	// memory mapping of each open table file (RocksDB's
	// allow_mmap_reads), so that a block the kernel holds in its page
	// cache costs no system call: measured (readrandom, 1M keys, the data
	// in the page cache), 0.0004 read syscalls per Get instead of 0.93,
	// and 0.65-0.89x the CPU per Get (docs/performance.md, "Reads through
	// a memory mapping"). Each block is copied out of the mapping, then checked (its
	// checksum) and decompressed as a block read with pread is, so the
	// block cache works as before and nothing the DB hands out refers to
	// a mapping. A file stays mapped while its descriptor is open, so
	// MaxOpenFiles bounds the mappings; a file the kernel will not map is
	// read with pread. A read through a mapping that faults (the file was
	// cut short under it, or the device failed) returns an error naming
	// the file, matching vfs.ErrReadFault, instead of crashing the
	// process. The pages read through mappings count in the process's
	// resident set (RSS, as RssFile) while mapped, up to the size of the
	// tables read, although they are the page cache's: shared, and
	// reclaimed by the kernel under memory pressure as any cached page
	// is. Set it where RSS is policed as if it were private memory.
	// Mappings are made on Linux (and by vfs.MemFS, which models them);
	// elsewhere tables are read with pread. See docs/design.md, "Reading
	// tables through mappings".
	DisableMmapReads bool

	// FS is the file system. nil: the operating system's.
	FS vfs.FS
	// BlockSize is the target size of an SSTable data block. 0: 4 KiB.
	BlockSize int
	// Compression chooses how the blocks of each new SSTable are
	// compressed, by the level it is written to: one Compression for
	// every level (e.g. ZstdCompression), or a PerLevelCompression
	// (e.g. PerLevelCompression{6: ZstdCompression}: zstd at the bottom
	// level, snappy above). nil: SnappyCompression everywhere. See
	// docs/compression.md.
	Compression CompressionPolicy
	// MaxImmutableMemTables is how many full memtables may wait for a flush
	// before writers wait. 0: 2.
	MaxImmutableMemTables int
	// L0CompactionThreshold is the L0 file count that starts a compaction
	// of L0 into the base level. 0: 6. With keys spread over the key space
	// every such compaction rewrites the whole base level, so the more
	// files it takes at once, the less it rewrites per byte written:
	// measured over 1M random keys, 6 files rather than 4 cut the bytes
	// written into the base and bottom levels by 20%, at the cost of up to
	// two more L0 files for a read to consult.
	L0CompactionThreshold int
	// L0SlowdownWritesThreshold is the L0 file count from which writes are
	// slowed to let compaction catch up: each byte is charged a pause that
	// grows with the number of L0 files, up to 50 ns a byte (at most 20 MB/s)
	// one file short of L0StopWritesThreshold. 0: L0StopWritesThreshold,
	// which slows nothing: writes run at full speed until L0 reaches the
	// stop threshold, as in Pebble. Set it lower to trade throughput for
	// smoother latency under a sustained load: measured (fillrandom, 1M
	// keys, one writer, 2 cores), a slowdown from 8 files paused writes for
	// about a fifth of the fill, and the fill ran at 0.85-0.98x the speed
	// it has without one, at the same write amplification; on 2 cores a
	// paused writer leaves a core idle rather than giving it to compaction.
	L0SlowdownWritesThreshold int
	// L0StopWritesThreshold is the L0 file count at which writes wait for
	// compaction; it must be above L0CompactionThreshold. 0: 12, or twice
	// L0CompactionThreshold if that is more.
	L0StopWritesThreshold int
	// LBaseMaxBytes is the target size of the base level, the level L0
	// compacts into. Level targets follow the data: the bottom level's
	// target is the size of the largest level, and those between the base
	// level and the bottom grow by one factor from LBaseMaxBytes to it. The
	// base level is L6 while the store is small and moves up a level each
	// time it would otherwise hold more than LBaseMaxBytes in a tree growing
	// 10x per level (so about every 10x of data). 0: 64 MiB.
	LBaseMaxBytes int64
	// TargetFileSize is the size at which compaction output is split into a
	// new SSTable; from half that size, a table also ends where a file of
	// the level below starts, so that it lines up with the files it will be
	// compacted into. 0: 2 MiB.
	TargetFileSize int64
	// DisableAutomaticCompactions stops background compactions; Compact
	// still works. Tests use it to keep files in L0.
	DisableAutomaticCompactions bool
	// DisableReadCompactions turns off read compactions, which are on by
	// default: a table whose Gets read a data block for nothing (a
	// filter's false positive) about once per 32 KiB that its merge would
	// rewrite (the table and its overlap below), and at least 100 times,
	// is compacted into the level below once no compaction for the tree's
	// shape is due, so that later lookups in its range consult one table
	// fewer. See docs/design.md.
	DisableReadCompactions bool
	// FilterPolicy, when set, chooses the filter of each new SSTable and
	// overrides BloomBitsPerKey: UniformFilter, PerLevelFilters or
	// MonkeyBloom. See docs/filters.md, "Choosing a filter".
	FilterPolicy FilterPolicy
	// Prefix, when set, puts each key's prefix in new tables' filters
	// besides the key (the filters are sized for both), so that an iterator
	// over one prefix (IterOptions.Prefix) skips the tables without it.
	// Tables record the extractor's name; those written with another one,
	// or none, are read without prefix skips. nil: keys only.
	Prefix *PrefixExtractor
	// RangeFilter, when set, gives every new SSTable a range filter (see
	// package rangefilter) with these options: its bits per key (0:
	// rangefilter.DefaultBitsPerKey) and, for keys that are numbers
	// already, a UserMap (nil: each table's dense map of its keys). A
	// bounded iterator (both bounds set) skips, before reading a block,
	// every table whose range filter says no key of [LowerBound,
	// UpperBound) is there; the table's range tombstones still apply.
	// Tables written without a range filter, or with a UserMap of
	// another name, are read as before; a table's range filter built
	// with the dense map is consulted whatever this option says now. nil:
	// no range filters in new tables.
	RangeFilter *rangefilter.Options
	// Logger receives one line per background event (flush, compaction,
	// recovery). nil: silent.
	Logger func(format string, args ...any)
	// EventListener, when set, is told of each flush and compaction as it
	// ends, and of the events operators alert on (see EventListener). nil:
	// nobody is.
	EventListener *EventListener

	// ReadOnly opens the store without writing anything to its directory:
	// no file is created, written, renamed or removed. The WALs are
	// replayed into memory (a torn tail is left where it is), nothing is
	// flushed or compacted, and every write (Put, Delete, DeleteRange,
	// Apply, Flush, Compact) returns an error matching ErrReadOnly. The
	// store must exist (else an error matching fs.ErrNotExist). Read-only
	// opens take a shared lock on the LOCK file: several of them coexist,
	// and a read-write Open excludes them and is excluded by them. A
	// store whose LOCK file is absent (a copy made without it) opens
	// read-only without a lock, since taking one would create the file;
	// a read-write Open is then not excluded, and creates it. See
	// docs/operations.md, "Read-only use".
	ReadOnly bool
	// ErrorIfNotExists makes Open fail, creating nothing, with an error
	// matching fs.ErrNotExist, when dir holds no store (no CURRENT file),
	// instead of creating one there.
	ErrorIfNotExists bool
	// ErrorIfExists makes Open fail, touching nothing, with an error
	// matching fs.ErrExist, when dir already holds a store (a CURRENT
	// file).
	ErrorIfExists bool
}

// validate rejects settings that have no meaning, before anything is
// touched on disk.
func (o *Options) validate() error {
	if o == nil {
		return nil
	}
	switch {
	case o.MemTableSize < 0:
		return fmt.Errorf("shale: Options.MemTableSize %d is negative", o.MemTableSize)
	case o.BloomBitsPerKey < NoFilter || o.BloomBitsPerKey > 64:
		return fmt.Errorf("shale: Options.BloomBitsPerKey %d: want 1 to 64, 0 for the default, or NoFilter", o.BloomBitsPerKey)
	case o.BlockSize < 0, o.RowCacheSize < 0, o.MaxOpenFiles < 0, o.MaxImmutableMemTables < 0, o.L0CompactionThreshold < 0,
		o.L0SlowdownWritesThreshold < 0, o.L0StopWritesThreshold < 0, o.LBaseMaxBytes < 0, o.TargetFileSize < 0:
		return fmt.Errorf("shale: Options has a negative size or count")
	}
	switch {
	case o.ErrorIfExists && o.ErrorIfNotExists:
		return fmt.Errorf("shale: Options.ErrorIfExists and ErrorIfNotExists together refuse every directory")
	case o.ErrorIfExists && o.ReadOnly:
		return fmt.Errorf("shale: Options.ErrorIfExists with ReadOnly refuses every directory: a read-only open creates no store")
	}
	if err := o.Prefix.validate(); err != nil {
		return err
	}
	if err := validateCompression(o.Compression); err != nil {
		return err
	}
	if rf := o.RangeFilter; rf != nil {
		if _, err := rangefilter.NewBuilder(rf); err != nil {
			return fmt.Errorf("shale: Options.RangeFilter: %w", err)
		}
	}
	d := o.withDefaults()
	if d.L0StopWritesThreshold <= d.L0CompactionThreshold || d.L0SlowdownWritesThreshold < d.L0CompactionThreshold {
		return fmt.Errorf("shale: L0 write thresholds (slowdown %d, stop %d) must be above L0CompactionThreshold %d, or writes would wait for a compaction that never starts",
			d.L0SlowdownWritesThreshold, d.L0StopWritesThreshold, d.L0CompactionThreshold)
	}
	return nil
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	setDefault := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDefault(&r.MemTableSize, 4<<20)
	setDefault(&r.BloomBitsPerKey, 10)
	setDefault(&r.BlockCacheSize, 8<<20)
	setDefault(&r.BlockSize, 4<<10)
	setDefault(&r.MaxOpenFiles, defaultMaxOpenFiles())
	setDefault(&r.MaxImmutableMemTables, 2)
	setDefault(&r.L0CompactionThreshold, 6)
	// Writes must never wait for a compaction the picker would not start,
	// so the write thresholds default to above the compaction threshold.
	setDefault(&r.L0StopWritesThreshold, max(12, 2*r.L0CompactionThreshold))
	setDefault(&r.L0SlowdownWritesThreshold, r.L0StopWritesThreshold)
	if r.LBaseMaxBytes == 0 {
		r.LBaseMaxBytes = 64 << 20
	}
	if r.TargetFileSize == 0 {
		r.TargetFileSize = 2 << 20
	}
	if r.FS == nil {
		r.FS = vfs.Default
	}
	if r.FilterPolicy == nil {
		var f TableFilter
		if r.BloomBitsPerKey > 0 {
			f = BloomFilter(r.BloomBitsPerKey)
		}
		r.FilterPolicy = UniformFilter(f)
	}
	return r
}
