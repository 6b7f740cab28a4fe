package cuckoo_test

import (
	"errors"
	"fmt"

	"github.com/shale-db/shale/cuckoo"
)

// A set of active sessions that come and go: each is added when it opens
// and removed when it closes, so the filter stays small and accurate, in
// about 12.6 bits a session at 12-bit fingerprints.
func Example_sessions() {
	active := cuckoo.New(1000, 12) // room for 1000 sessions
	for i := range 1000 {
		if err := active.Add(fmt.Appendf(nil, "session-%d", i)); err != nil {
			fmt.Println(err)
		}
	}
	for i := range 500 { // the first half close
		active.Remove(fmt.Appendf(nil, "session-%d", i))
	}
	fmt.Println("open:", active.Len())
	fmt.Println("session-999 may be open:", active.MayContain([]byte("session-999")))

	// Adding past the capacity fails, and leaves the filter as it was.
	full := cuckoo.New(10, 8)
	added := 0
	for i := range 100 {
		if err := full.Add(fmt.Appendf(nil, "x%d", i)); errors.Is(err, cuckoo.ErrFull) {
			break
		}
		added++
	}
	fmt.Println("full after", added, "of 100, still holding", full.Len())
	// Output:
	// open: 500
	// session-999 may be open: true
	// full after 12 of 100, still holding 12
}
