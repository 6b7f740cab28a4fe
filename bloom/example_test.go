package bloom_test

import (
	"fmt"

	"github.com/shale-db/shale/bloom"
)

// slowService stands for the authoritative list: a database or a remote
// call, exact but expensive.
type slowService struct {
	blocked map[string]bool
	calls   int
}

func (s *slowService) IsBlocked(addr string) bool {
	s.calls++
	return s.blocked[addr]
}

// A blocklist in front of a slow service: the filter answers "definitely
// not" for almost every address that is not blocked, so only a "maybe" goes
// to the service. The filter has no false negatives, so no blocked address
// gets through.
func Example_blocklist() {
	service := &slowService{blocked: map[string]bool{}}
	filter := bloom.New(1000, 0.01) // 1000 items at 1% false positives
	for i := range 1000 {
		addr := fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		service.blocked[addr] = true
		filter.Add([]byte(addr))
	}

	blocked, checks := 0, 0
	for i := range 10000 { // 1000 blocked addresses, then 9000 others
		addr := fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		checks++
		if filter.MayContain([]byte(addr)) && service.IsBlocked(addr) {
			blocked++
		}
	}
	fmt.Printf("%d checks, %d blocked, %d reached the service\n", checks, blocked, service.calls)
	fmt.Printf("filter: %.1f bits per item, %d probes\n", filter.BitsPerKey(), filter.K())
	// Output:
	// 10000 checks, 1000 blocked, 1069 reached the service
	// filter: 10.2 bits per item, 6 probes
}

// A counting filter can remove what it added, at 4 times a Bloom filter's
// memory: a plain Bloom filter cannot, since clearing a bit could clear
// another item's.
func ExampleCounting() {
	sessions := bloom.NewCounting(100, 0.01)
	sessions.Add([]byte("session-1"))
	sessions.Add([]byte("session-2"))
	fmt.Println("session-1 maybe open:", sessions.MayContain([]byte("session-1")))

	fmt.Println("removed:", sessions.Remove([]byte("session-1")))
	fmt.Println("session-1 maybe open:", sessions.MayContain([]byte("session-1")))
	fmt.Println("session-2 maybe open:", sessions.MayContain([]byte("session-2")))
	// Output:
	// session-1 maybe open: true
	// removed: true
	// session-1 maybe open: false
	// session-2 maybe open: true
}

// A scalable filter needs no item count up front: it adds a larger layer
// each time the newest fills, and keeps its false-positive rate below the
// target however many items arrive. Add skips an item the filter already
// seems to hold, so Len counts a little under the items offered: here 45 of
// 10000 were false positives of the layers before them.
func ExampleScalable() {
	seen := bloom.NewScalable(100, 0.01) // starts with room for 100 items
	for i := range 10000 {
		seen.Add(fmt.Appendf(nil, "url-%d", i))
	}
	falsePositives := 0
	for i := range 10000 {
		if seen.MayContain(fmt.Appendf(nil, "other-%d", i)) {
			falsePositives++
		}
	}
	fmt.Printf("%d items in %d layers; every item found: %v\n", seen.Len(), seen.Layers(), seen.MayContain([]byte("url-0")) && seen.MayContain([]byte("url-9999")))
	fmt.Printf("false positives under 1%%: %v\n", falsePositives < 100)
	// Output:
	// 9955 items in 7 layers; every item found: true
	// false positives under 1%: true
}
