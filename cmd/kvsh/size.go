package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/shale-db/shale"
)

// sizeUnits are the units a size may carry, binary all: K is KiB, as dd
// and the GNU tools read it.
var sizeUnits = []struct {
	names []string
	bytes int64
}{
	{[]string{"", "b"}, 1},
	{[]string{"k", "kib"}, 1 << 10},
	{[]string{"m", "mib"}, 1 << 20},
	{[]string{"g", "gib"}, 1 << 30},
	{[]string{"t", "tib"}, 1 << 40},
}

// maxSize bounds what parseSize accepts (1 PiB), far above any size kvsh
// takes and far below where a float64 of bytes loses precision.
const maxSize = 1 << 50

// parseSize parses what=s, a size in bytes of at least lo: a number with
// an optional binary unit, in any case (4096, 64MiB, 1.5k). KB, MB, GB and
// TB are refused rather than guessed at: they mean powers of 1000 to some
// and of 1024 to others.
func parseSize(what, s string, lo int) (int, error) {
	bad := func(why string) (int, error) {
		return 0, fmt.Errorf("%s: want a size of at least %s (4096, 64KiB, 1.5MiB; units B, KiB, MiB, GiB, TiB), not %s%s",
			what, plural(lo, "byte"), shale.FormatKey([]byte(s)), why)
	}
	num := strings.TrimRightFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
	unit := strings.ToLower(s[len(num):])
	if unit == "kb" || unit == "mb" || unit == "gb" || unit == "tb" {
		return bad(fmt.Sprintf(" (%s is ambiguous: say %siB)", s[len(num):], strings.ToUpper(unit[:1])))
	}
	for _, u := range sizeUnits {
		for _, name := range u.names {
			if unit != name {
				continue
			}
			f, err := strconv.ParseFloat(num, 64)
			n := f * float64(u.bytes)
			if err != nil || math.IsNaN(n) || n < float64(lo) || n > maxSize || n != math.Trunc(n) {
				return bad("")
			}
			return int(n), nil
		}
	}
	return bad("")
}

// sizeOption returns the size option name, or def when it is not given.
func sizeOption(opts map[string]string, name string, def, lo int) (int, error) {
	s, ok := opts[name]
	if !ok {
		return def, nil
	}
	return parseSize(name, s, lo)
}

// formatSize renders n bytes for people: in bytes below 1 KiB, else in the
// largest binary unit it reaches, with at most two decimals ("64 MiB",
// "1.5 KiB", "2.33 GiB").
func formatSize(n int64) string {
	for i := len(sizeUnits) - 1; i > 0; i-- {
		u := sizeUnits[i]
		if n >= u.bytes {
			v := strconv.FormatFloat(float64(n)/float64(u.bytes), 'f', 2, 64)
			v = strings.TrimRight(strings.TrimRight(v, "0"), ".")
			return v + " " + strings.ToUpper(u.names[0]) + "iB"
		}
	}
	return plural(int(n), "byte")
}
