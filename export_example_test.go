package shale_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/bloom"
)

// The owner of a denylist keeps it in a store and ships a filter of it; a
// reader checks the filter and asks the store only on "maybe".
func ExampleDB_ExportFilter() {
	db, done := tempStore(nil)
	defer done()
	for _, addr := range []string{"deny/192.0.2.7", "deny/198.51.100.23", "deny/203.0.113.9"} {
		if err := db.Put([]byte(addr), []byte("listed")); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Delete([]byte("deny/198.51.100.23")); err != nil { // delisted
		log.Fatal(err)
	}

	f, n, err := db.ExportFilter([]byte("deny/"), []byte("deny0"), 0.01)
	if err != nil {
		log.Fatal(err)
	}
	file, err := f.MarshalBinary() // what ships
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d addresses, %d bytes\n", n, len(file))

	var edge bloom.Filter
	if err := edge.UnmarshalBinary(file); err != nil {
		log.Fatal(err)
	}
	for _, addr := range []string{"deny/192.0.2.7", "deny/198.51.100.23", "deny/192.0.2.8"} {
		denied := false
		if edge.MayContain([]byte(addr)) { // only then ask the store
			_, err := db.Get([]byte(addr))
			if err != nil && !errors.Is(err, shale.ErrNotFound) {
				log.Fatal(err)
			}
			denied = err == nil
		}
		fmt.Printf("%s denied: %v\n", addr, denied)
	}
	// Output:
	// 2 addresses, 79 bytes
	// deny/192.0.2.7 denied: true
	// deny/198.51.100.23 denied: false
	// deny/192.0.2.8 denied: false
}
