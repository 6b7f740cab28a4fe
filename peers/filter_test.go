package peers

import (
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
	pebblebase "github.com/cockroachdb/pebble/v2"
	pebblebloom "github.com/cockroachdb/pebble/v2/bloom"
	"github.com/shale-db/shale/bloom"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// bitsPerKey is the filter budget of every comparison here.
const bitsPerKey = 10

// keySet is one set of added keys and the probes, never added, run against it.
type keySet struct {
	name   string
	added  [][]byte
	probes [][]byte
}

var (
	keySetsOnce sync.Once
	keySets     []keySet
)

func filterKeySets() []keySet {
	keySetsOnce.Do(func() {
		seq := seqKeys(0, numKeys)
		keySets = []keySet{
			// Sequential decimal keys, probed with the next 1M sequential keys.
			{"seq", seq, seqKeys(numKeys, 2*numKeys)},
			// The same keys, probed with "key%010dx": absent keys inside the
			// key range, as the DB benchmarks probe them.
			{"seq-x", seq, shuffled(numKeys, 7, func(i int) []byte { return append(seqKey(i), 'x') })},
			// Random 16-byte keys, probed with other random 16-byte keys.
			{"random16", randomKeys(numKeys, 1, 0), randomKeys(numKeys, 2, 0x80)},
		}
	})
	return keySets
}

// builtFilter is one filter of numKeys keys and a probe function over it.
type builtFilter struct {
	bytes int
	probe func(key []byte) bool
}

type filterImpl struct {
	name  string
	build func(keys [][]byte) builtFilter
}

var filterImpls = []filterImpl{
	{"shale", func(keys [][]byte) builtFilter {
		// filter.Hash (internal to shale) is xxhash.Sum64 of the user key.
		p := bloom.NewPolicy(bitsPerKey)
		w := p.NewWriter()
		for _, k := range keys {
			w.AddHash(xxhash.Sum64(k))
		}
		data, err := w.Finish()
		if err != nil {
			panic(err)
		}
		f, err := p.Decode(data)
		if err != nil {
			panic(err)
		}
		return builtFilter{len(data), func(k []byte) bool { return f.MayContain(xxhash.Sum64(k)) }}
	}},
	{"goleveldb", func(keys [][]byte) builtFilter {
		p := filter.NewBloomFilter(bitsPerKey)
		g := p.NewGenerator()
		for _, k := range keys {
			g.Add(k)
		}
		var buf util.Buffer
		g.Generate(&buf)
		data := buf.Bytes()
		return builtFilter{len(data), func(k []byte) bool { return p.Contains(data, k) }}
	}},
	{"pebble", func(keys [][]byte) builtFilter {
		p := pebblebloom.FilterPolicy(bitsPerKey)
		w := p.NewWriter(pebblebase.TableFilter)
		for _, k := range keys {
			w.AddKey(k)
		}
		data := w.Finish(nil)
		return builtFilter{len(data), func(k []byte) bool { return p.MayContain(pebblebase.TableFilter, data, k) }}
	}},
}

var (
	filtersMu sync.Mutex
	filters   = map[string]builtFilter{}
)

func getFilter(set keySet, impl filterImpl) builtFilter {
	filtersMu.Lock()
	defer filtersMu.Unlock()
	key := impl.name + "/" + set.name
	if set.name == "seq-x" { // the same added keys as "seq": the same filter
		key = impl.name + "/seq"
	}
	f, ok := filters[key]
	if !ok {
		f = impl.build(set.added)
		for _, k := range set.added { // a filter has no false negatives
			if !f.probe(k) {
				panic(impl.name + ": false negative")
			}
		}
		filters[key] = f
	}
	return f
}

// BenchmarkFilterFP builds one filter of 1M keys at 10 bits/key per engine
// and key set, outside the timer, and probes it with 1M keys never added.
// fp% is over one full pass of the probes (exact and deterministic); ns/op is
// the time of one probe, hashing included.
func BenchmarkFilterFP(b *testing.B) {
	for _, set := range filterKeySets() {
		for _, impl := range filterImpls {
			b.Run(set.name+"/"+impl.name, func(b *testing.B) {
				f := getFilter(set, impl)
				fp := 0
				for _, k := range set.probes {
					if f.probe(k) {
						fp++
					}
				}
				b.ResetTimer()
				hits := 0
				for i := 0; i < b.N; i++ {
					if f.probe(set.probes[i%len(set.probes)]) {
						hits++
					}
				}
				b.StopTimer()
				sink = hits
				b.ReportMetric(100*float64(fp)/float64(len(set.probes)), "fp%")
				b.ReportMetric(float64(f.bytes*8)/float64(len(set.added)), "bits/key")
			})
		}
	}
}

var sink int
