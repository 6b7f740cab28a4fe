package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/bloom"
)

// The filter command is a playground for one standalone filter of package
// bloom, outside the store: a plain Bloom filter, a counting one or a
// scalable one. Beside the filter it keeps the items added to it (the
// truth), so that test can say which "maybe" is a false positive and stats
// can count false negatives, which a filter alone cannot know.

// playground is the filter of the filter command.
type playground struct {
	kind     string // "Bloom", "counting" or "scalable"
	capacity int    // the items it was sized for (scalable: its first layer)
	rate     float64
	plain    *bloom.Filter   // kind Bloom
	counting *bloom.Counting // kind counting
	scalable *bloom.Scalable // kind scalable
	added    map[string]int  // item -> times added minus times removed, when above 0
	filled   int             // items fill has generated: the next is item-(filled+1)
	probed   int             // items probe has generated: the next is absent-(probed+1)
}

func newPlayground(kind string, n int, p float64) *playground {
	pg := &playground{kind: kind, capacity: n, rate: p, added: map[string]int{}}
	switch kind {
	case "Bloom":
		pg.plain = bloom.New(n, p)
	case "counting":
		pg.counting = bloom.NewCounting(n, p)
	case "scalable":
		pg.scalable = bloom.NewScalable(n, p)
	}
	return pg
}

func (pg *playground) add(item string) {
	switch {
	case pg.plain != nil:
		pg.plain.Add([]byte(item))
	case pg.counting != nil:
		pg.counting.Add([]byte(item))
	default:
		pg.scalable.Add([]byte(item))
	}
	pg.added[item]++
}

func (pg *playground) mayContain(item string) bool {
	switch {
	case pg.plain != nil:
		return pg.plain.MayContain([]byte(item))
	case pg.counting != nil:
		return pg.counting.MayContain([]byte(item))
	}
	return pg.scalable.MayContain([]byte(item))
}

func (pg *playground) k() int {
	if pg.plain != nil {
		return pg.plain.K()
	}
	return pg.counting.K()
}

// size is the filter's size in bytes, as MarshalBinary encodes it.
func (pg *playground) size() int {
	var data []byte
	switch {
	case pg.plain != nil:
		data, _ = pg.plain.MarshalBinary()
	case pg.counting != nil:
		data, _ = pg.counting.MarshalBinary()
	default:
		data, _ = pg.scalable.MarshalBinary()
	}
	return len(data)
}

// cells is the number of bits (Bloom) or counters (counting) of the filter:
// a counting filter has as many counters as a Bloom filter of the same
// sizing has bits.
func (pg *playground) cells() int {
	return int(math.Round(bloom.New(pg.capacity, pg.rate).BitsPerKey() * float64(max(pg.capacity, 1))))
}

// maxFilterItems bounds fill, probe and sizes, so that a typo cannot make
// the shell build a filter of billions of items.
const maxFilterItems = 10_000_000

const filterUsage = "usage: filter new N P [counting|scalable] | add ITEM... | test ITEM... | remove ITEM... | fill N | probe N | stats | sizes N [BITS...]"

func cmdFilter(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 0 {
		return errors.New(filterUsage)
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "new":
		return sh.filterNew(rest)
	case "sizes":
		return filterSizes(sh.out, rest)
	case "add", "test", "remove":
		if len(rest) == 0 {
			return fmt.Errorf("usage: filter %s ITEM...", sub)
		}
	case "fill", "probe":
		if len(rest) != 1 {
			return fmt.Errorf("usage: filter %s N", sub)
		}
	case "stats":
		if len(rest) != 0 {
			return errors.New("usage: filter stats")
		}
	default:
		return errors.New(filterUsage)
	}
	pg := sh.filter
	if pg == nil {
		return errors.New("no filter yet: filter new N P makes one")
	}
	switch sub {
	case "add":
		for _, item := range rest {
			pg.add(item)
		}
		fmt.Fprintf(sh.out, "added %s (%d in the filter)\n", plural(len(rest), "item"), len(pg.added))
	case "test":
		for _, item := range rest {
			fmt.Fprintf(sh.out, "%s: %s\n", shale.FormatKey([]byte(item)), pg.verdict(item))
		}
	case "remove":
		return pg.remove(sh.out, rest)
	case "fill":
		return pg.fill(sh.out, rest[0])
	case "probe":
		return pg.probe(sh.out, rest[0])
	case "stats":
		pg.stats(sh.out)
	}
	return nil
}

func (sh *shell) filterNew(args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return errors.New("usage: filter new N P [counting|scalable]")
	}
	n, err := parseInt("N", args[0], 1)
	if err != nil {
		return err
	}
	if n > maxFilterItems {
		return fmt.Errorf("N: at most %d", maxFilterItems)
	}
	p, err := strconv.ParseFloat(args[1], 64)
	if err != nil || !(p > 0 && p < 1) {
		return fmt.Errorf("P: want a false-positive rate between 0 and 1, such as 0.01, not %s", shale.FormatKey([]byte(args[1])))
	}
	kind := "Bloom"
	if len(args) == 3 {
		if args[2] != "counting" && args[2] != "scalable" {
			return errors.New("usage: filter new N P [counting|scalable]")
		}
		kind = args[2]
	}
	pg := newPlayground(kind, n, p)
	sh.filter = pg
	switch kind {
	case "Bloom":
		fmt.Fprintf(sh.out, "new Bloom filter for %s at p = %g: %d bits (%.2f per item), %s per item, %s\n",
			plural(n, "item"), p, pg.cells(), pg.plain.BitsPerKey(), plural(pg.k(), "probe"), plural(pg.size(), "byte"))
	case "counting":
		fmt.Fprintf(sh.out, "new counting filter for %s at p = %g: %d 4-bit counters, %s per item, %s\n",
			plural(n, "item"), p, pg.cells(), plural(pg.k(), "probe"), plural(pg.size(), "byte"))
	case "scalable":
		fmt.Fprintf(sh.out, "new scalable filter: a first layer for %s, each next layer twice as large, all together below p = %g\n",
			plural(n, "item"), p)
		return nil
	}
	m := bloom.BitsForKeys(n, p)
	fmt.Fprintf(sh.out, "the textbook formulas: m = -n ln p / (ln 2)^2 = %d bits (%.2f per item), k = (m/n) ln 2 = %d\n",
		m, bloom.BitsPerKeyForRate(p), bloom.ProbesForBitsPerKey(bloom.BitsPerKeyForRate(p)))
	return nil
}

// verdict is what the filter answers for item, and whether that is true.
func (pg *playground) verdict(item string) string {
	maybe, added := pg.mayContain(item), pg.added[item] > 0
	switch {
	case maybe && added:
		return "maybe (it was added)"
	case maybe:
		return "maybe (a false positive: it was never added)"
	case added:
		return "definitely not (a FALSE NEGATIVE: it was added)"
	}
	return "definitely not"
}

func (pg *playground) remove(out io.Writer, items []string) error {
	if pg.counting == nil {
		return fmt.Errorf("a %s filter cannot remove an item: its bits are shared with other items, and clearing them would lose those (filter new N P counting makes one that can)", pg.kind)
	}
	for _, item := range items {
		was := pg.added[item] > 0
		switch {
		case !pg.counting.Remove([]byte(item)):
			fmt.Fprintf(out, "%s: not removed: the filter says definitely not\n", shale.FormatKey([]byte(item)))
		case was:
			fmt.Fprintf(out, "%s: removed\n", shale.FormatKey([]byte(item)))
		default:
			fmt.Fprintf(out, "%s: removed, but it was never added: the counters it decremented belong to other items\n", shale.FormatKey([]byte(item)))
		}
		if was {
			pg.added[item]--
			if pg.added[item] == 0 {
				delete(pg.added, item)
			}
		}
	}
	return nil
}

func (pg *playground) fill(out io.Writer, arg string) error {
	n, err := parseInt("N", arg, 1)
	if err != nil {
		return err
	}
	if n > maxFilterItems-len(pg.added) {
		return fmt.Errorf("N: the playground holds at most %d items", maxFilterItems)
	}
	first := pg.filled + 1
	for range n {
		pg.filled++
		pg.add(fmt.Sprintf("item-%d", pg.filled))
	}
	fmt.Fprintf(out, "added %s, item-%d to item-%d (%d in the filter)\n", plural(n, "item"), first, pg.filled, len(pg.added))
	return nil
}

// probe tests n items never added and prints how many the filter let
// through: the measured false-positive rate.
func (pg *playground) probe(out io.Writer, arg string) error {
	n, err := parseInt("N", arg, 1)
	if err != nil {
		return err
	}
	if n > maxFilterItems {
		return fmt.Errorf("N: at most %d", maxFilterItems)
	}
	first, maybe := pg.probed+1, 0
	for tested := 0; tested < n; {
		pg.probed++
		item := fmt.Sprintf("absent-%d", pg.probed)
		if pg.added[item] > 0 {
			continue // added by hand: not a probe of an absent item
		}
		tested++
		if pg.mayContain(item) {
			maybe++
		}
	}
	fmt.Fprintf(out, "tested %s never added, absent-%d to absent-%d: %d said maybe, a false-positive rate of %s\n",
		plural(n, "item"), first, pg.probed, maybe, percent(float64(maybe)/float64(n)))
	return nil
}

func (pg *playground) stats(out io.Writer) {
	items := len(pg.added)
	var falseNeg []string
	for item := range pg.added {
		if !pg.mayContain(item) {
			falseNeg = append(falseNeg, item)
		}
	}
	switch {
	case pg.scalable != nil:
		fmt.Fprintf(out, "scalable filter, kept below p = %g: %s of %d, %d, %d, ... items; %s\n",
			pg.rate, plural(pg.scalable.Layers(), "layer"), pg.capacity, 2*pg.capacity, 4*pg.capacity, plural(pg.size(), "byte"))
		fmt.Fprintf(out, "items: %d added (%d fill the layers: an item that already tested maybe takes no room)\n", items, pg.scalable.Len())
	default:
		cells, cell := "bits", "bits"
		if pg.counting != nil {
			cells, cell = "4-bit counters", "counters"
		}
		fmt.Fprintf(out, "%s filter for %s at p = %g: %d %s, %s per item, %s\n",
			pg.kind, plural(pg.capacity, "item"), pg.rate, pg.cells(), cells, plural(pg.k(), "probe"), plural(pg.size(), "byte"))
		fmt.Fprintf(out, "items: %d added", items)
		if items > 0 {
			perItem := float64(pg.cells()) / float64(items)
			fmt.Fprintf(out, ", %.2f %s per item; the formula's rate at that fill: %s",
				perItem, cell, percent(bloom.ExpectedFalsePositiveRate(perItem, pg.k())))
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "false negatives among the items added: %d", len(falseNeg))
	if len(falseNeg) > 0 {
		slices.Sort(falseNeg)
		if len(falseNeg) > maxListed {
			falseNeg = append(falseNeg[:maxListed], "...")
		}
		fmt.Fprintf(out, " (%s)", strings.Join(falseNeg, ", "))
	}
	fmt.Fprintln(out)
}

// filterSizes prints, for each bits per item, the textbook formula's probes
// and rate beside a blocked filter of n items at that size (the table
// filter's layout) and the rate it measures over n items never added.
func filterSizes(out io.Writer, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: filter sizes N [BITS...]")
	}
	n, err := parseInt("N", args[0], 1)
	if err != nil {
		return err
	}
	if n > maxFilterItems {
		return fmt.Errorf("N: at most %d", maxFilterItems)
	}
	sizes := []int{5, 10, 15}
	if len(args) > 1 {
		sizes = sizes[:0]
		for _, a := range args[1:] {
			b, err := parseInt("BITS", a, 1)
			if err != nil || b > maxBloomBits {
				return fmt.Errorf("BITS: want 1 to %d, not %s", maxBloomBits, shale.FormatKey([]byte(a)))
			}
			sizes = append(sizes, b)
		}
	}
	fmt.Fprintf(out, "%s added, %s never added tested, per size:\n", plural(n, "item"), plural(n, "item"))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bits/item\tformula k\tformula rate\tblocked k\tmeasured rate\tfalse positives\tbytes\t")
	for _, bits := range sizes {
		f := bloom.NewWithBitsPerKey(n, float64(bits))
		for i := range n {
			f.Add(fmt.Appendf(nil, "item-%d", i+1))
		}
		fp := 0
		for i := range n {
			if f.MayContain(fmt.Appendf(nil, "absent-%d", i+1)) {
				fp++
			}
		}
		k := bloom.ProbesForBitsPerKey(float64(bits))
		data, _ := f.MarshalBinary()
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t%d\t%d\t\n", bits, k, percent(bloom.ExpectedFalsePositiveRate(float64(bits), k)),
			f.K(), percent(float64(fp)/float64(n)), fp, len(data))
	}
	return tw.Flush()
}

// percent prints a rate as a percentage with three significant digits.
func percent(r float64) string { return strconv.FormatFloat(100*r, 'g', 3, 64) + "%" }

// maxListed bounds the false negatives stats names.
const maxListed = 10

// maxFilterArgs bounds the items of one filter add, test or remove.
const maxFilterArgs = 1000
