// Command denylist runs an edge denylist end to end, as the seed lessons
// describe it: the authoritative list of denied IPv4 addresses lives in a
// shale store; its owner exports a Bloom filter of it (DB.ExportFilter) and
// ships the filter as one file; an edge loads the file and checks each
// request's address against the filter first, asking the store only when the
// filter says "maybe".
//
// It prints the filter's size beside the seed's arithmetic ("for 200 million
// addresses at 1% you need about 10 bits per item, roughly 240 MB, and 7 hash
// functions"), the checks per second, how many checks reached the store (and
// how many of those were false positives), and how long a refresh, one export
// from the store, took.
//
//	go run ./examples/denylist                 # 100,000 addresses, 1M checks
//	go run ./examples/denylist -n 10000000     # a refresh of 10M entries
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/bloom"
)

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 100_000, "addresses on the denylist")
	flag.IntVar(&cfg.checks, "checks", 1_000_000, "requests the edge checks")
	flag.Float64Var(&cfg.p, "p", 0.01, "the filter's false-positive rate")
	flag.Float64Var(&cfg.listed, "listed", 0.01, "fraction of the requests that come from listed addresses")
	flag.IntVar(&cfg.refreshes, "refreshes", 3, "exports to time (the machine may be busy: the fastest and the median are reported)")
	flag.StringVar(&cfg.dir, "dir", "", "the store's directory (default: a temporary one, removed at the end)")
	flag.Parse()
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "denylist:", err)
		os.Exit(2)
	}
	if cfg.dir == "" {
		dir, err := os.MkdirTemp("", "denylist")
		if err != nil {
			fmt.Fprintln(os.Stderr, "denylist:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		cfg.dir = dir
	}
	r, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "denylist:", err)
		os.Exit(1)
	}
	r.print(os.Stdout)
}

// config is what the flags set.
type config struct {
	n, checks int
	refreshes int
	p, listed float64
	dir       string
}

func (c config) validate() error {
	switch {
	case c.n < 1 || c.n > math.MaxInt32:
		return fmt.Errorf("-n %d: want 1 to %d addresses", c.n, math.MaxInt32)
	case c.checks < 1:
		return fmt.Errorf("-checks %d: want at least 1", c.checks)
	case c.refreshes < 1:
		return fmt.Errorf("-refreshes %d: want at least 1", c.refreshes)
	case !(c.p > 0 && c.p < 1):
		return fmt.Errorf("-p %v: want a rate between 0 and 1", c.p)
	case !(c.listed >= 0 && c.listed <= 1):
		return fmt.Errorf("-listed %v: want a fraction from 0 to 1", c.listed)
	}
	return nil
}

// Keys are "ip4/" and the address's 4 bytes, so that the denylist is one
// range of a store that may hold other things, and exported as that range.
var (
	keyPrefix = []byte("ip4/")
	keyEnd    = []byte("ip40") // the first key past the prefix: '0' follows '/'
)

func key(dst []byte, addr uint32) []byte {
	return append(append(dst[:0], keyPrefix...), byte(addr>>24), byte(addr>>16), byte(addr>>8), byte(addr))
}

// address returns the i-th generated address. It is a bijection on uint32
// (a multiply by an odd constant and xor-shifts, each invertible), so the
// first n of them are distinct, every later one is not among them, and they
// are scattered over the address space.
func address(i uint32) uint32 {
	x := i * 0x9e3779b1
	x ^= x >> 15
	x *= 0x85ebca6b
	x ^= x >> 13
	return x
}

// result is what one run measured.
type result struct {
	cfg          config
	load         time.Duration   // writing the n addresses to the store
	exports      []time.Duration // each refresh: ExportFilter and MarshalBinary, sorted
	items        int             // keys in the filter
	fileBytes    int             // the marshalled filter, as shipped
	bitsPerItem  float64
	probes       int
	checking     time.Duration // the checks, filter and store together
	listedChecks int           // checks of listed addresses
	denied       int           // checks the store confirmed
	reached      int           // checks the filter sent to the store
}

// run loads cfg.n addresses into a store in cfg.dir, exports the filter,
// and checks cfg.checks requests the way an edge would.
func run(cfg config) (r result, err error) {
	r.cfg = cfg
	// NoSync: the store is rebuilt from its source if the machine fails
	// while it loads; the load is not what this program measures.
	db, err := shale.Open(cfg.dir, &shale.Options{NoSync: true})
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()

	start := time.Now()
	b := db.NewBatch()
	var k []byte
	for i := 0; i < cfg.n; i++ {
		k = key(k, address(uint32(i)))
		b.Put(k, []byte("listed"))
		if b.Count() == 1000 || i == cfg.n-1 {
			if err := db.Apply(b); err != nil {
				return r, err
			}
			b.Reset()
		}
	}
	r.load = time.Since(start)

	// The owner's side: a refresh exports the filter and ships its bytes.
	var file []byte
	for range cfg.refreshes {
		start = time.Now()
		f, items, err := db.ExportFilter(keyPrefix, keyEnd, cfg.p)
		if err != nil {
			return r, err
		}
		if file, err = f.MarshalBinary(); err != nil {
			return r, err
		}
		r.exports = append(r.exports, time.Since(start))
		r.items, r.fileBytes, r.bitsPerItem, r.probes = items, len(file), f.BitsPerKey(), f.K()
	}
	slices.Sort(r.exports)

	// The edge's side: load the file, then check each request.
	var edge bloom.Filter
	if err := edge.UnmarshalBinary(file); err != nil {
		return r, err
	}
	traffic := make([]uint32, cfg.checks)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range traffic {
		if rng.Float64() < cfg.listed {
			traffic[i] = address(uint32(rng.IntN(cfg.n)))
			r.listedChecks++
		} else { // an address past the first n: never listed
			traffic[i] = address(uint32(cfg.n + rng.IntN(math.MaxUint32-cfg.n+1)))
		}
	}
	start = time.Now()
	for _, addr := range traffic {
		k = key(k, addr)
		if !edge.MayContain(k) {
			continue // allowed without asking the store
		}
		r.reached++
		_, err := db.Get(k)
		switch {
		case err == nil:
			r.denied++
		case !errors.Is(err, shale.ErrNotFound):
			return r, err
		}
	}
	r.checking = time.Since(start)
	return r, nil
}

// seedArithmetic returns the textbook sizing the seed quotes for n items at
// rate p: m = -n ln p / (ln 2)² bits and k = (m/n) ln 2 probes.
func seedArithmetic(n int, p float64) (bits int, k int) {
	bits = bloom.BitsForKeys(n, p)
	return bits, bloom.ProbesForBitsPerKey(float64(bits) / float64(n))
}

// print writes the report.
func (r result) print(w io.Writer) {
	c := r.cfg
	fmt.Fprintf(w, "denylist: %d addresses, filter at p=%g, %d checks (%.3g%% from listed addresses)\n",
		c.n, c.p, c.checks, 100*c.listed)
	fmt.Fprintf(w, "load:     %d addresses written in %v\n", c.n, r.load.Round(time.Millisecond))
	fmt.Fprintf(w, "refresh:  %d items exported from the store and marshalled in %v (fastest of %d; median %v)\n",
		r.items, r.exports[0].Round(time.Millisecond), len(r.exports), r.exports[len(r.exports)/2].Round(time.Millisecond))

	seedBits, seedK := seedArithmetic(c.n, c.p)
	fmt.Fprintf(w, "size:     the filter: %.2f bits per item, %d probes, one file of %s\n",
		r.bitsPerItem, r.probes, megabytes(r.fileBytes))
	fmt.Fprintf(w, "          the seed's arithmetic for n=%d: %.2f bits per item, %d probes, %s: the filter's file is %.1f%% larger\n",
		c.n, float64(seedBits)/float64(c.n), seedK, megabytes((seedBits+7)/8),
		100*(float64(8*r.fileBytes)/float64(seedBits)-1))
	const seedN = 200_000_000
	seed200, _ := seedArithmetic(seedN, c.p)
	fmt.Fprintf(w, "          for 200M addresses: the arithmetic gives %s, this filter's layout %s\n",
		megabytes(seed200/8), megabytes(int(r.bitsPerItem*seedN/8)))

	clean := c.checks - r.listedChecks
	falsePositives := r.reached - r.denied
	fmt.Fprintf(w, "checks:   %d in %v: %.0f checks/s\n", c.checks, r.checking.Round(time.Millisecond),
		float64(c.checks)/r.checking.Seconds())
	fmt.Fprintf(w, "          reached the store: %d (%.2f%% of the checks): %d of %d listed addresses denied, %d false positives (%.3f%% of the %d unlisted)\n",
		r.reached, 100*float64(r.reached)/float64(c.checks), r.denied, r.listedChecks,
		falsePositives, 100*float64(falsePositives)/float64(max(clean, 1)), clean)
}

// megabytes formats a size in bytes as MB (10^6 bytes), or KB below 1 MB.
func megabytes(n int) string {
	if n < 1e6 {
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.2f MB", float64(n)/1e6)
}
