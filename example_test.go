package shale_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shale-db/shale"
)

// tempStore opens a store in a fresh temporary directory; the returned
// function closes it and removes the directory.
func tempStore(opts *shale.Options) (*shale.DB, func()) {
	dir, err := os.MkdirTemp("", "shale-example")
	if err != nil {
		log.Fatal(err)
	}
	db, err := shale.Open(dir, opts)
	if err != nil {
		log.Fatal(err)
	}
	return db, func() {
		if err := db.Close(); err != nil {
			log.Fatal(err)
		}
		os.RemoveAll(dir)
	}
}

// The basic cycle: open a store in a directory, write, read, close.
func Example() {
	dir, err := os.MkdirTemp("", "shale-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := shale.Open(dir, nil) // nil: the default options
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("city"), []byte("Lisbon")); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("city"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("city = %s\n", v)

	_, err = db.Get([]byte("country"))
	fmt.Println("country absent:", errors.Is(err, shale.ErrNotFound))

	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	_, err = db.Get([]byte("city"))
	fmt.Println("after Close:", errors.Is(err, shale.ErrClosed))
	// Output:
	// city = Lisbon
	// country absent: true
	// after Close: true
}

// A batch is applied atomically: after a crash, all of it or none of it.
func ExampleDB_Apply() {
	db, done := tempStore(nil)
	defer done()

	// Move 10 from alice to bob in one atomic write.
	b := db.NewBatch()
	b.Put([]byte("account/alice"), []byte("90"))
	b.Put([]byte("account/bob"), []byte("110"))
	b.Delete([]byte("pending/transfer-7"))
	if err := db.Apply(b); err != nil {
		log.Fatal(err)
	}
	for _, k := range []string{"account/alice", "account/bob"} {
		v, _ := db.Get([]byte(k))
		fmt.Printf("%s = %s\n", k, v)
	}
	// Output:
	// account/alice = 90
	// account/bob = 110
}

// Bounds make an iterator see only [LowerBound, UpperBound): here, one
// user's keys, forwards and then backwards.
func ExampleDB_NewIter() {
	db, done := tempStore(nil)
	defer done()

	for _, k := range []string{"user/1/name", "user/2/email", "user/2/name", "user/3/name"} {
		if err := db.Put([]byte(k), []byte("v")); err != nil {
			log.Fatal(err)
		}
	}
	it := db.NewIter(&shale.IterOptions{
		LowerBound: []byte("user/2/"),
		UpperBound: []byte("user/20"), // '0' follows '/': everything under user/2/
	})
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Println("forward ", string(it.Key()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		fmt.Println("backward", string(it.Key()))
	}
	if err := it.Close(); err != nil { // Close reports any error the walk met
		log.Fatal(err)
	}
	// Output:
	// forward  user/2/email
	// forward  user/2/name
	// backward user/2/name
	// backward user/2/email
}

// A snapshot keeps reading the store as it was when it was taken.
func ExampleDB_NewSnapshot() {
	db, done := tempStore(nil)
	defer done()

	db.Put([]byte("config"), []byte("v1"))
	snap := db.NewSnapshot()
	db.Put([]byte("config"), []byte("v2"))
	db.Delete([]byte("config"))

	old, _ := snap.Get([]byte("config"))
	_, err := db.Get([]byte("config"))
	fmt.Printf("snapshot sees %s; the store now: %v\n", old, err)
	if err := snap.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// snapshot sees v1; the store now: shale: not found
}

// Metrics count what reads cost, and a traced lookup shows the path of one
// read (level -1 is the memtable): here a filter proves that the only table cannot hold the key, so the
// lookup reads nothing from disk.
func ExampleDB_TraceGet() {
	db, done := tempStore(nil)
	defer done()

	for i := range 100 {
		db.Put(fmt.Appendf(nil, "key%03d", 2*i), []byte("v")) // even keys only
	}
	if err := db.Flush(); err != nil { // the memtable becomes an L0 table
		log.Fatal(err)
	}
	// Opening the table read its filter and index; count from here.
	before := db.Metrics()
	trace, err := db.TraceGet([]byte("key051")) // odd: absent, inside the table's range
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range trace.Steps {
		fmt.Printf("level %d: %s\n", s.Level, s.Outcome)
	}
	after := db.Metrics()
	fmt.Printf("disk reads %d, filter checks %d, filter skips %d\n",
		after.DiskReads-before.DiskReads, after.FilterChecks-before.FilterChecks, after.FilterSkips-before.FilterSkips)
	// Output:
	// level -1: miss: its key filter says never written here
	// level 0: filter: definitely not; skipped, no I/O
	// disk reads 0, filter checks 1, filter skips 1
}

// The filter of new tables is chosen by Options: Bloom filters at some bits
// per key (the default, 10), binary fuse filters, none, or a policy that
// varies by level.
func ExampleOptions_filterPolicy() {
	for _, opts := range []*shale.Options{
		{BloomBitsPerKey: 16}, // fewer false positives, more memory
		{FilterPolicy: shale.UniformFilter(shale.FuseFilter())}, // about 9 bits per key for 0.4%
		{FilterPolicy: shale.MonkeyBloom(10)},                   // same memory, spent where it saves most reads
		{BloomBitsPerKey: shale.NoFilter},                       // no filter: every lookup reads a block
	} {
		db, done := tempStore(opts)
		for i := range 1000 {
			db.Put(fmt.Appendf(nil, "key%04d", i), []byte("v"))
		}
		db.Flush()
		m := db.Metrics()
		fmt.Printf("filter memory > 0: %v\n", m.FilterMemory > 0)
		done()
	}
	// Output:
	// filter memory > 0: true
	// filter memory > 0: true
	// filter memory > 0: true
	// filter memory > 0: false
}

// Build a table outside the store, then add it to the store in one step.
func ExampleDB_Ingest() {
	db, done := tempStore(nil)
	defer done()
	dir, err := os.MkdirTemp("", "shale-example-tables")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := db.Put([]byte("apple"), []byte("green")); err != nil {
		log.Fatal(err)
	}

	path := filepath.Join(dir, "fruit.sst")
	w, err := shale.NewTableWriter(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	w.Put([]byte("apple"), []byte("red")) // keys in ascending order
	w.Put([]byte("cherry"), []byte("dark red"))
	if err := w.Put([]byte("banana"), []byte("yellow")); err != nil {
		fmt.Println("refused: banana comes before cherry")
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	if err := db.Ingest([]string{path}); err != nil { // newer than every write before
		log.Fatal(err)
	}
	v, _ := db.Get([]byte("apple"))
	fmt.Printf("apple=%s\n", v)
	// Output:
	// refused: banana comes before cherry
	// apple=red
}
