package ribbon_test

import (
	"fmt"

	"github.com/shale-db/shale/ribbon"
)

// A set built once from all its items, say the words of a dictionary,
// shipped as bytes and loaded elsewhere: at 8 bits per key a Ribbon filter
// answers "definitely not" for all but about 0.7% of the words it does not
// hold.
func Example_static() {
	var words [][]byte
	for i := range 10_000 {
		words = append(words, fmt.Appendf(nil, "word%d", i))
	}
	f, err := ribbon.New(words, 8)
	if err != nil {
		fmt.Println(err) // no seed solved the system: use another filter
		return
	}
	data, _ := f.MarshalBinary()

	var loaded ribbon.Filter
	if err := loaded.UnmarshalBinary(data); err != nil {
		fmt.Println(err)
		return
	}
	maybe := 0
	for i := range 100_000 {
		if loaded.MayContain(fmt.Appendf(nil, "other%d", i)) {
			maybe++
		}
	}
	fmt.Printf("%d bytes, %.1f bits/key; word42: %v; %d of 100,000 others maybe\n",
		len(data), loaded.BitsPerKey(), loaded.MayContain([]byte("word42")), maybe)
	// Output:
	// 10026 bytes, 8.0 bits/key; word42: true; 662 of 100,000 others maybe
}
