package main

import "testing"

// TestKeys checks that present and missing keys are 16 bytes and interleave.
func TestKeys(t *testing.T) {
	k, m, next := make([]byte, keySize), make([]byte, keySize), make([]byte, keySize)
	presentKey(k, 41)
	missingKey(m, 41)
	presentKey(next, 42)
	if string(k) != "0000000000000082" || string(m) != "0000000000000083" || string(next) != "0000000000000084" {
		t.Fatalf("keys %q %q %q", k, m, next)
	}
}

// TestWorkloads runs every workload on every engine on a small store, in
// this process: the reads check every answer, so a store that lost keys or
// invented them fails here.
func TestWorkloads(t *testing.T) {
	const n = 2000
	for name := range engines {
		if name == "pebble-filters" {
			continue // reads below, on Pebble's store
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			readers := []string{name}
			if name == "pebble" {
				readers = append(readers, "pebble-filters")
			}
			res, err := runChild(name, "fillrandom", dir, n, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Ops != n || res.WriteAmp < 1 || res.IO.WChar < n*(keySize+valueSize) || res.PeakRSS <= 0 {
				t.Fatalf("fillrandom: %+v", res)
			}
			if reports := name != "goleveldb"; reports != (len(res.LevelWrites) == 7) {
				t.Fatalf("fillrandom: bytes written per level %v, want 7 levels from shale and Pebble, none from goleveldb", res.LevelWrites)
			}
			for _, r := range readers {
				for _, w := range []string{"readrandom", "readmissing"} {
					res, err := runChild(r, w, dir, n, n)
					if err != nil {
						t.Fatalf("%s %s: %v", r, w, err)
					}
					if res.Ops != n || res.OpsPerSec <= 0 {
						t.Fatalf("%s %s: %+v", r, w, res)
					}
				}
			}
		})
	}
}
