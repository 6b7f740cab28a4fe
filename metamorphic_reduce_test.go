package shale

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// metaReduce shortens a failing operation sequence: it removes chunks of
// operations, halving the chunk size down to single operations, and keeps
// each removal after which fails still reports a failure; then it
// simplifies the writes that remain (simplifyWrites). Removing the creation
// or the close of a snapshot or iterator removes every operation on it too
// (and every iterator on a removed snapshot), so that each candidate is a
// sequence the generator could have made. Background flushes and
// compactions make a run not quite deterministic, so fails may differ
// between two runs of one sequence; the result is then a sequence that
// failed at least once.
func metaReduce(ops []metaOp, fails func([]metaOp) bool) []metaOp {
	for chunk := max(len(ops)/2, 1); ; chunk /= 2 {
		for start := 0; start < len(ops); {
			if cand := withoutOps(ops, start, start+chunk); len(cand) < len(ops) && fails(cand) {
				ops = cand
			} else {
				start += chunk
			}
		}
		if chunk == 1 {
			return simplifyWrites(ops, fails)
		}
	}
}

// simplifyWrites tries each batch with one mutation fewer, and each value
// without its padding (what follows the "op.position" that names it),
// keeping each change after which fails still holds.
func simplifyWrites(ops []metaOp, fails func([]metaOp) bool) []metaOp {
	try := func(i int, muts []metaMutation) bool {
		cand := slices.Clone(ops)
		cand[i] = writeOp{metaWrite{batch: ops[i].(writeOp).w.batch, muts: muts}}
		if !fails(cand) {
			return false
		}
		ops = cand
		return true
	}
	for i := range ops {
		w, ok := ops[i].(writeOp)
		if !ok {
			continue
		}
		for j := 0; w.w.batch && j < len(ops[i].(writeOp).w.muts); {
			if !try(i, slices.Delete(slices.Clone(ops[i].(writeOp).w.muts), j, j+1)) {
				j++
			}
		}
		for j, m := range ops[i].(writeOp).w.muts {
			if short, _, padded := strings.Cut(m.value, "-"); padded {
				muts := slices.Clone(ops[i].(writeOp).w.muts)
				muts[j].value = short
				try(i, muts)
			}
		}
	}
	return ops
}

// withoutOps returns ops without ops[from:to] and without the operations
// that depend on the snapshots and iterators whose creation or close that
// range holds.
func withoutOps(ops []metaOp, from, to int) []metaOp {
	snapGone, iterGone := map[int]bool{}, map[int]bool{}
	for _, op := range ops[from:min(to, len(ops))] {
		switch o := op.(type) {
		case newSnapshotOp:
			snapGone[o.id] = true
		case closeSnapshotOp:
			snapGone[o.id] = true
		case newIterOp:
			iterGone[o.id] = true
		case closeIterOp:
			iterGone[o.id] = true
		}
	}
	for _, op := range ops {
		if o, ok := op.(newIterOp); ok && snapGone[o.snap] {
			iterGone[o.id] = true
		}
	}
	out := make([]metaOp, 0, len(ops))
	for i, op := range ops {
		if i >= from && i < to {
			continue
		}
		var gone bool
		switch o := op.(type) {
		case newSnapshotOp:
			gone = snapGone[o.id]
		case closeSnapshotOp:
			gone = snapGone[o.id]
		case getOp:
			gone = snapGone[o.snap]
		case newIterOp:
			gone = iterGone[o.id]
		case moveIterOp:
			gone = iterGone[o.id]
		case closeIterOp:
			gone = iterGone[o.id]
		}
		if !gone {
			out = append(out, op)
		}
	}
	return out
}

// TestMetamorphicReduce checks that reduction keeps the operation that
// fails, and with it only what that operation needs, in a sequence that is
// still well formed.
func TestMetamorphicReduce(t *testing.T) {
	// The failure: some move of an iterator opened on a snapshot, in the
	// first seed that has one.
	var ops []metaOp
	var target metaOp
	for seed := uint64(1); seed <= 20 && target == nil; seed++ {
		ops = generateMetaOps(seed, 400)
		if err := checkWellFormed(ops); err != nil {
			t.Fatalf("seed %d generated: %v", seed, err)
		}
		onSnap := map[int]bool{}
		for _, op := range ops {
			switch o := op.(type) {
			case newIterOp:
				onSnap[o.id] = o.snap >= 0
			case moveIterOp:
				if onSnap[o.id] && target == nil {
					target = o
				}
			}
		}
	}
	if target == nil {
		t.Fatal("no seed made an iterator on a snapshot")
	}
	fails := func(ops []metaOp) bool {
		for _, op := range ops {
			if op == target {
				return true
			}
		}
		return false
	}
	got := metaReduce(ops, fails)
	// What must remain: the snapshot, the iterator on it, the move, and
	// the two closes.
	if len(got) != 5 || !fails(got) {
		t.Fatalf("reduced %d operations to %d:\n%s", len(ops), len(got), metaOpsText(got))
	}
	if err := checkWellFormed(got); err != nil {
		t.Fatalf("%v in the reduced sequence:\n%s", err, metaOpsText(got))
	}
}

// checkWellFormed reports an operation on a snapshot or iterator that is not
// open, and a reopen or crash (or the end) with one open.
func checkWellFormed(ops []metaOp) error {
	snaps, iters := map[int]bool{}, map[int]bool{}
	for i, op := range ops {
		ok := true
		switch o := op.(type) {
		case newSnapshotOp:
			snaps[o.id] = true
		case closeSnapshotOp:
			ok = snaps[o.id]
			delete(snaps, o.id)
		case getOp:
			ok = o.snap < 0 || snaps[o.snap]
		case newIterOp:
			ok = o.snap < 0 || snaps[o.snap]
			iters[o.id] = true
		case moveIterOp:
			ok = iters[o.id]
		case closeIterOp:
			ok = iters[o.id]
			delete(iters, o.id)
		case reopenOp, crashOp:
			ok = len(snaps) == 0 && len(iters) == 0
		}
		if !ok {
			return fmt.Errorf("operation %d (%s) is out of place", i, op)
		}
	}
	if len(snaps) != 0 || len(iters) != 0 {
		return fmt.Errorf("%d snapshots and %d iterators left open", len(snaps), len(iters))
	}
	return nil
}

// metaOpsText lists ops one a line.
func metaOpsText(ops []metaOp) string {
	var s string
	for i, op := range ops {
		s += fmt.Sprintf("%d %s\n", i, op)
	}
	return s
}
