package base

import (
	"fmt"
	"strings"
)

// FormatSize renders a byte count in binary units, for people: "12 B",
// "640 KiB", "1.5 GiB".
func FormatSize(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, unit := float64(n)/1024, 0
	for f >= 1024 && unit < 5 {
		f /= 1024
		unit++
	}
	s := strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0")
	return s + " " + string("KMGTPE"[unit]) + "iB"
}
