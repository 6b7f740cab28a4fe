package shale

import (
	"sync"
	"testing"
)

// goErrors collects the failures of a test's goroutines. Reporting never
// blocks, unlike a send on a channel of fixed capacity, which hangs a
// goroutine that fails more often than the capacity (and the test with it,
// until the test binary's timeout); goroutines that loop poll failed to stop
// at the first failure.
type goErrors struct {
	mu    sync.Mutex
	first []error // the first maxGoErrors failures
	count int
}

const maxGoErrors = 10

// report records err.
func (g *goErrors) report(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.first) < maxGoErrors {
		g.first = append(g.first, err)
	}
	g.count++
}

// failed reports whether any goroutine has failed.
func (g *goErrors) failed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count > 0
}

// check fails t with the failures reported, once every goroutine is done.
func (g *goErrors) check(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, err := range g.first {
		t.Error(err)
	}
	if g.count > 0 {
		t.Fatalf("%d failures in goroutines (the first %d above)", g.count, len(g.first))
	}
}
