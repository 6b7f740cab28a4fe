package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs the example at a small n and checks what it counted: every
// check of a listed address reached the store and was denied, the filter
// holds exactly the listed addresses, and the unlisted checks that reached
// the store, the false positives, are near the rate asked for.
func TestRun(t *testing.T) {
	cfg := config{n: 5000, checks: 50000, refreshes: 1, p: 0.01, listed: 0.1, dir: t.TempDir()}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	r, err := run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.items != cfg.n {
		t.Errorf("the filter holds %d items, want %d", r.items, cfg.n)
	}
	if r.listedChecks == 0 || r.denied != r.listedChecks {
		t.Errorf("%d of %d checks of listed addresses were denied, want all", r.denied, r.listedChecks)
	}
	// 45,000 unlisted checks at 1%: 450 false positives expected, with a
	// standard deviation of 21; the bounds are 7 of them away.
	if fp := r.reached - r.denied; fp < 300 || fp > 600 {
		t.Errorf("%d false positives in %d unlisted checks, want about 1%%", fp, cfg.checks-r.listedChecks)
	}
	var out bytes.Buffer
	r.print(&out)
	t.Log("\n" + out.String())
	for _, want := range []string{"5000 addresses", "refresh:", "the seed's arithmetic for n=5000: 9.59 bits per item, 7 probes", "checks/s", "listed addresses denied"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// TestValidate: flags out of range are refused.
func TestValidate(t *testing.T) {
	for _, c := range []config{
		{n: 0, checks: 1, refreshes: 1, p: 0.01},
		{n: 1, checks: 1, refreshes: 0, p: 0.01},
		{n: 1, checks: 0, refreshes: 1, p: 0.01},
		{n: 1, checks: 1, refreshes: 1, p: 1},
		{n: 1, checks: 1, refreshes: 1, p: 0.01, listed: 1.5},
	} {
		if c.validate() == nil {
			t.Errorf("%+v: valid, want an error", c)
		}
	}
}
