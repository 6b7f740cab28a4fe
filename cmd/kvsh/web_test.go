package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/rangefilter"
)

// webTestPrefix is the test store's prefix extractor: a key's first 8
// bytes, "key" and 5 of its 6 digits, a prefix of 10 possible keys.
var webTestPrefix = shale.FixedPrefix(8)

// multiLevelStore writes a store with tables in several levels, and
// prefix filters of webTestPrefix, and returns its directory. It is the
// same store every run: each round of writes is flushed and its
// compactions settle before the next round starts, so the compaction
// picker sees the same sequence of versions; the memtable is large enough
// that only the explicit flushes flush it.
func multiLevelStore(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "store")
	db, err := shale.Open(dir, &shale.Options{MemTableSize: 64 << 20, L0CompactionThreshold: 4, LBaseMaxBytes: 32 << 10, TargetFileSize: 32 << 10, Prefix: webTestPrefix})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(16, 1))
	val := make([]byte, 100)
	for range 8 {
		b := db.NewBatch()
		for range 2500 {
			for i := range val {
				val[i] = loadAlphabet[rng.IntN(len(loadAlphabet))]
			}
			b.Put(fmt.Appendf(nil, "key%06d", rng.IntN(1000000)), val)
		}
		if err := db.Apply(b); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		settle(t, db)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// settle waits, for at most a minute, until no flush or compaction is
// wanted.
func settle(t testing.TB, db *shale.DB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		m := db.Metrics()
		if m.ImmutableTables == 0 && !m.CompactionDue {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("compactions did not settle in a minute:\n%s", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// webTestShell opens a shell on a multi-level store with automatic
// compactions off (and its prefix extractor), and adds two L0 tables, with
// range filters, so that the tree keeps its shape while the test looks at
// it.
func webTestShell(t testing.TB) (*shell, *bytes.Buffer) {
	var out bytes.Buffer
	sh, err := newShellWith(&out, multiLevelStore(t), false, shale.Options{DisableAutomaticCompactions: true, Prefix: webTestPrefix, RangeFilter: &rangefilter.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sh.close(); err != nil {
			t.Error(err)
		}
	})
	for _, line := range []string{"put key250000x newer", "flush", "put key750000x newer", "put key750001x newer", "flush"} {
		if sh.exec(line) || strings.Contains(out.String(), "error") {
			t.Fatalf("%s: %s", line, out.String())
		}
	}
	levels := 0
	for _, l := range sh.db.Tables() {
		if len(l) > 0 {
			levels++
		}
	}
	t.Logf("the test store: %s", sh.db.Metrics().Shape())
	if len(sh.db.Tables()[0]) != 2 || levels < 4 {
		t.Fatalf("want 2 L0 tables and at least 4 levels: %s", sh.db.Metrics().Shape())
	}
	return sh, &out
}

// getJSON GETs url and decodes its JSON answer into v, returning the
// status.
func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return res.StatusCode
}

// checkState checks the tree /api/state drew against Tables: every level
// and table, in order, placed in the key space in order.
func checkState(t *testing.T, st webState, want [][]shale.TableInfo) {
	t.Helper()
	if len(st.Levels) != len(want) {
		t.Fatalf("%d levels, want %d", len(st.Levels), len(want))
	}
	var xs0, xs1 []float64
	for level, l := range st.Levels {
		if l.Level != level || l.Files != len(want[level]) || len(l.Tables) != len(want[level]) {
			t.Fatalf("L%d: level %d with %d files, %d tables; want %d", level, l.Level, l.Files, len(l.Tables), len(want[level]))
		}
		var size uint64
		for i, wt := range l.Tables {
			ti := want[level][i]
			size += ti.Size
			if wt.FileNum != ti.FileNum || wt.Size != ti.Size || wt.Entries != ti.Entries || wt.Filter != ti.Filter ||
				wt.Smallest != shale.FormatKey(ti.Smallest) || wt.Largest != shale.FormatKey(ti.Largest) ||
				wt.FilterChecks != ti.FilterChecks || wt.FilterSkips != ti.FilterSkips || wt.FalsePositives != ti.FilterFalsePositives {
				t.Errorf("L%d table %d: %+v, want %+v", level, i, wt, ti)
			}
			if wt.X0 < 0 || wt.X0 > wt.X1 || wt.X1 > 1 {
				t.Errorf("L%d table %06d at [%g, %g]", level, wt.FileNum, wt.X0, wt.X1)
			}
			if level > 0 && i > 0 && wt.X0 < l.Tables[i-1].X1 {
				t.Errorf("L%d table %06d at %g starts before the one before it ends, %g", level, wt.FileNum, wt.X0, l.Tables[i-1].X1)
			}
			xs0, xs1 = append(xs0, wt.X0), append(xs1, wt.X1)
		}
		if l.Bytes != size {
			t.Errorf("L%d: %d bytes, want %d", level, l.Bytes, size)
		}
	}
	if slices.Min(xs0) != 0 || slices.Max(xs1) != 1 {
		t.Errorf("the tables span [%g, %g] of the key space, want [0, 1]", slices.Min(xs0), slices.Max(xs1))
	}
}

// checkTrace checks a lookup's steps, as the view has them, against
// TraceGet's, step by step. Blocks are compared as a total: a second
// lookup reads from the block cache what the first read from disk.
func checkTrace(t *testing.T, got []webStep, want *shale.LookupTrace) {
	t.Helper()
	if len(got) != len(want.Steps) {
		t.Fatalf("get %s: %d steps, want %d:\n%s", want.Key, len(got), len(want.Steps), want)
	}
	for i, g := range got {
		w := want.Steps[i]
		answered := i == len(got)-1 && want.Result != "absent"
		wantMark := map[bool]string{true: markFound, false: markDeleted}[strings.HasPrefix(want.Result, "found")]
		switch {
		case answered:
		case w.OutsideRange:
			wantMark = markOutside
		case w.FilterSkipped:
			wantMark = markFilterNo
		case w.FalsePositive:
			wantMark = markFalsePos
		case w.FilterChecked:
			wantMark = markFilterYes
		default:
			wantMark = markMiss
		}
		if g.Source != w.Source || g.Outcome != w.Outcome || g.Mark != wantMark || g.FileNum != w.FileNum ||
			g.BlocksFromDisk+g.BlocksFromCache != w.BlocksFromDisk+w.BlocksFromCache {
			t.Errorf("get %s, step %d: %+v, want %s (%s):\n%s", want.Key, i+1, g, w.Source, wantMark, want)
		}
	}
}

// lookupKeys are keys whose lookups take each kind of step: one below
// every table, one found at the bottom, one absent, one found in L0.
func lookupKeys(sh *shell) []string {
	bottom := sh.db.Tables()[shale.NumLevels-1]
	return []string{"a", string(bottom[len(bottom)/2].Smallest), "key500000~", "key750001x"}
}

// TestWebAPI checks the JSON endpoints against Tables and TraceGet, without
// a browser.
func TestWebAPI(t *testing.T) {
	sh, _ := webTestShell(t)
	srv := httptest.NewServer(webHandler(sh, webPageData{Addr: "test", Loopback: true}))
	defer srv.Close()

	marks := map[string]bool{}
	for _, key := range lookupKeys(sh) {
		var tr webTrace
		if code := getJSON(t, srv.URL+"/api/get?key="+key, &tr); code != http.StatusOK {
			t.Fatalf("get %s: status %d", key, code)
		}
		want, err := sh.db.TraceGet([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Key != key || tr.Result != want.Result {
			t.Errorf("get %s: key %s, result %q; want %q", key, tr.Key, tr.Result, want.Result)
		}
		checkTrace(t, tr.Steps, want)
		for _, s := range tr.Steps {
			marks[s.Mark] = true
		}
	}
	for _, m := range []string{markOutside, markFilterNo, markFound} {
		if !marks[m] {
			t.Errorf("no lookup had a step marked %q", m)
		}
	}

	// The lookups above counted in the tables' filter counts, which the
	// state now shows.
	var st webState
	if code := getJSON(t, srv.URL+"/api/state", &st); code != http.StatusOK {
		t.Fatalf("state: status %d", code)
	}
	checkState(t, st, sh.db.Tables())
	if st.Dir != sh.dir || st.Metrics.Flushes != 2 {
		t.Errorf("state: dir %s, %d flushes; want %s, 2", st.Dir, st.Metrics.Flushes, sh.dir)
	}
	var flushes []webEvent
	kinds := map[string]bool{}
	for _, e := range st.Events {
		kinds[e.Kind] = true
		if e.Kind == "flush" {
			flushes = append(flushes, e)
		}
	}
	if len(flushes) != 2 || flushes[0].Outputs[0].FileNum != sh.db.Tables()[0][0].FileNum {
		t.Errorf("events: %+v, want the two flushes, newest first", st.Events)
	}
	for _, kind := range []string{"table created", "WAL created", "WAL deleted"} {
		if !kinds[kind] {
			t.Errorf("events: no %q among %+v", kind, st.Events)
		}
	}

	l0 := sh.db.Tables()[0]
	if st.Events[0].Tables != fmt.Sprintf("memtable → L0:%d", l0[0].FileNum) || !regexp.MustCompile(`^\d+ bytes written, [\d.]+ ms$`).MatchString(st.Events[0].Detail) {
		t.Errorf("the newest event's text: %q, %q", st.Events[0].Tables, st.Events[0].Detail)
	}
	clock := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d\d\d$`)
	for _, tm := range []string{st.Time, st.Opened, st.Events[0].Time, st.Events[1].Time} {
		if !clock.MatchString(tm) {
			t.Errorf("a time %q, want the one format HH:MM:SS.mmm", tm)
		}
	}

	var e map[string]string
	if code := getJSON(t, srv.URL+`/api/get?key="a`, &e); code != http.StatusBadRequest || e["error"] == "" {
		t.Errorf("a malformed key: status %d, %v", code, e)
	}
	for _, path := range []string{"/", "/api/state", "/api/get?key=a", "/api/scan?from=a&to=b", "/static/app.js"} {
		res, err := http.Post(srv.URL+path, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: status %d, want 405", path, res.StatusCode)
		}
	}
	res, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	page.ReadFrom(res.Body)
	res.Body.Close()
	for _, want := range []string{"read-only", "loopback only", `src="/static/app.js"`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page does not say %q", want)
		}
	}

	if err := sh.closeStore(); err != nil {
		t.Fatal(err)
	}
	if code := getJSON(t, srv.URL+"/api/state", &e); code != http.StatusServiceUnavailable || e["error"] != errNoStore.Error() {
		t.Errorf("with no store: status %d, %v", code, e)
	}
}

// TestWebReopen: when kvsh reopens the store (to change an Open option),
// whose metrics then start from zero, the view's events start afresh too,
// and the state says when the store was opened and that it was reopened.
func TestWebReopen(t *testing.T) {
	var out bytes.Buffer
	sh, err := newShell(&out, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.close()
	srv := httptest.NewServer(webHandler(sh, webPageData{Addr: "test", Loopback: true}))
	defer srv.Close()
	state := func() webState {
		t.Helper()
		var st webState
		if code := getJSON(t, srv.URL+"/api/state", &st); code != http.StatusOK {
			t.Fatalf("state: status %d", code)
		}
		return st
	}
	for _, line := range []string{"put a 1", "flush"} {
		if _, err := sh.execLine(line); err != nil {
			t.Fatal(err)
		}
	}
	// flushes are the state's flush events (an open, a flush and a
	// compaction come with events for the WALs and tables they create
	// and delete).
	flushes := func(st webState) []webEvent {
		var fs []webEvent
		for _, e := range st.Events {
			if e.Kind == "flush" {
				fs = append(fs, e)
			}
		}
		return fs
	}
	before := state()
	if before.Openings != 1 || before.Metrics.Flushes != 1 || len(flushes(before)) != 1 {
		t.Fatalf("before the reopen: %d openings, %d flushes, events %+v; want 1, 1, the flush", before.Openings, before.Metrics.Flushes, before.Events)
	}
	if _, err := sh.execLine("rowcache 1MiB"); err != nil {
		t.Fatal(err)
	}
	after := state()
	if after.Openings != 2 || after.Metrics.Flushes != 0 || len(flushes(after)) != 0 || len(after.Events) >= len(before.Events) {
		t.Fatalf("after the reopen: %d openings, %d flushes, events %+v; want 2, 0, only the reopen's", after.Openings, after.Metrics.Flushes, after.Events)
	}
	if _, err := sh.execLine("put b 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := sh.execLine("flush"); err != nil {
		t.Fatal(err)
	}
	if st := state(); st.Metrics.Flushes != 1 || len(flushes(st)) != 1 || flushes(st)[0].Seq <= flushes(before)[0].Seq {
		t.Fatalf("a flush after the reopen: %d flushes, events %+v; want it alone, numbered after the one before", st.Metrics.Flushes, st.Events)
	}
}

// scanQuery is what the scan box sends: FROM, TO and PREFIX as typed.
type scanQuery struct{ from, to, prefix string }

// options are the IterOptions the query asks for: an empty field is
// unbounded, or no prefix.
func (q scanQuery) options() *shale.IterOptions {
	key := func(s string) []byte {
		if s == "" {
			return nil
		}
		return []byte(s)
	}
	return &shale.IterOptions{LowerBound: key(q.from), UpperBound: key(q.to), Prefix: key(q.prefix)}
}

func (q scanQuery) values() url.Values {
	return url.Values{"from": {q.from}, "to": {q.to}, "prefix": {q.prefix}}
}

// scanQueries are scans that take each kind of step: a bounded scan, which
// reads the tables whose range meets its bounds and folds each level's
// others into one step; a scan of a prefix shorter than the extractor's,
// whose prefix filters cannot be consulted; and a scan of a prefix that
// some keys have, and of one that none has, whose tables' prefix filters
// are consulted and say "definitely not" for some.
func scanQueries(t *testing.T, sh *shell) []scanQuery {
	t.Helper()
	bottom := sh.db.Tables()[shale.NumLevels-1]
	present := string(bottom[len(bottom)/2].Smallest[:8])
	absent := ""
	for i := range 1000 {
		p := fmt.Sprintf("key%05d", 50000+i)
		tr, err := sh.db.TraceScan(&shale.IterOptions{Prefix: []byte(p)})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Keys == 0 {
			absent = p
			break
		}
	}
	if absent == "" {
		t.Fatal("every prefix from key50000 to key50999 has keys")
	}
	// The last scan lies within the key range of the newest L0 table
	// (key750000x to key750001x) and holds none of its keys: its range
	// filter rules it out.
	return []scanQuery{{"key2", "key3", ""}, {"key1", "key2", "key1"}, {"", "", present}, {"a", "z", absent}, {"key750000y", "key750001", ""}}
}

// checkScan checks a scan's steps, as the view has them, against
// TraceScan's, step by step. Blocks are compared as a total: a second scan
// reads from the block cache what the first read from disk.
func checkScan(t *testing.T, q scanQuery, got webScan, want *shale.ScanTrace) {
	t.Helper()
	bound := func(k []byte) string {
		if k == nil {
			return ""
		}
		return shale.FormatKey(k)
	}
	if got.Keys != want.Keys || got.Lower != bound(want.LowerBound) || got.Upper != bound(want.UpperBound) ||
		got.Prefix != bound(want.Prefix) || got.Extractor != want.Extractor || got.PrefixFilters != want.PrefixFilters {
		t.Errorf("scan %+v: %d keys, [%s, %s) prefix %s (%s, %v); want:\n%s", q, got.Keys, got.Lower, got.Upper,
			got.Prefix, got.Extractor, got.PrefixFilters, want)
	}
	if got.X0 < 0 || got.X0 > got.X1 || got.X1 > 1 {
		t.Errorf("scan %+v: drawn over [%g, %g] of the key space", q, got.X0, got.X1)
	}
	if len(got.Steps) != len(want.Steps) {
		t.Fatalf("scan %+v: %d steps, want %d:\n%s", q, len(got.Steps), len(want.Steps), want)
	}
	for i, g := range got.Steps {
		w := want.Steps[i]
		wantRange := ""
		if w.FileNum != 0 {
			end := map[bool]string{false: "]", true: ")"}[w.LargestExclusive]
			wantRange = "[" + shale.FormatKey(w.Smallest) + " .. " + shale.FormatKey(w.Largest) + end
		}
		wantOutcome := w
		wantOutcome.BlocksFromDisk, wantOutcome.BlocksFromCache = g.BlocksFromDisk, g.BlocksFromCache
		if g.Outcome != wantOutcome.Outcome() {
			t.Errorf("scan %+v, step %d: outcome %q, want %q", q, i+1, g.Outcome, wantOutcome.Outcome())
		}
		if g.Source != w.Source || g.Level != w.Level || g.FileNum != w.FileNum || g.Files != w.Files || g.Range != wantRange ||
			g.Reason != w.Reason.String() || g.PrefixChecked != w.PrefixChecked || g.RangeChecked != w.RangeChecked || g.Entries != w.Entries ||
			g.BlocksFromDisk+g.BlocksFromCache != w.BlocksFromDisk+w.BlocksFromCache {
			t.Errorf("scan %+v, step %d: %+v, want %+v:\n%s", q, i+1, g, w, want)
		}
	}
}

// scanKinds records which kinds of step some scan took, to check that the
// scans took every kind.
type scanKinds map[string]bool

func (k scanKinds) add(sc webScan) {
	k[fmt.Sprintf("prefix filters consulted: %v", sc.PrefixFilters)] = true
	for _, s := range sc.Steps {
		k[s.Reason] = true
		if s.Files > 0 {
			k["a level's tables outside the range"] = true
		}
		if s.PrefixChecked && s.Reason == shale.ScanRead.String() {
			k["prefix filter: maybe; read"] = true
		}
		if s.RangeChecked && s.Reason == shale.ScanRead.String() {
			k["range filter: maybe; read"] = true
		}
	}
}

func (k scanKinds) check(t *testing.T) {
	t.Helper()
	for _, want := range []string{shale.ScanRead.String(), shale.ScanKeyRange.String(), shale.ScanPrefixFilter.String(),
		shale.ScanRangeFilter.String(), "range filter: maybe; read", "a level's tables outside the range", "prefix filter: maybe; read", "prefix filters consulted: true", "prefix filters consulted: false"} {
		if !k[want] {
			t.Errorf("no scan took a step of kind %q", want)
		}
	}
}

// TestWebScan checks /api/scan against TraceScan, on a store with prefix
// filters.
func TestWebScan(t *testing.T) {
	sh, _ := webTestShell(t)
	srv := httptest.NewServer(webHandler(sh, webPageData{Addr: "test", Loopback: true}))
	defer srv.Close()

	kinds := scanKinds{}
	for _, q := range append(scanQueries(t, sh), scanQuery{}) {
		var sc webScan
		if code := getJSON(t, srv.URL+"/api/scan?"+q.values().Encode(), &sc); code != http.StatusOK {
			t.Fatalf("scan %+v: status %d", q, code)
		}
		want, err := sh.db.TraceScan(q.options())
		if err != nil {
			t.Fatal(err)
		}
		checkScan(t, q, sc, want)
		kinds.add(sc)
	}
	kinds.check(t)

	// Without parameters: the whole key space, every key.
	var all webScan
	getJSON(t, srv.URL+"/api/scan", &all)
	every, err := sh.db.TraceScan(nil)
	if err != nil {
		t.Fatal(err)
	}
	if all.Lower != "" || all.Upper != "" || all.X0 != 0 || all.X1 != 1 || all.Keys != every.Keys || every.Keys < 19000 {
		t.Errorf("scan unbounded: [%q, %q) over [%g, %g], %d keys; want %d", all.Lower, all.Upper, all.X0, all.X1, all.Keys, every.Keys)
	}
	// Quoted keys read as the shell reads them: "" is the empty key, a
	// bound, not an unbounded end.
	var quoted webScan
	getJSON(t, srv.URL+"/api/scan?"+url.Values{"from": {`""`}, "to": {`"key2 "`}}.Encode(), &quoted)
	if quoted.Lower != `""` || quoted.Upper != `"key2 "` {
		t.Errorf(`scan ["", "key2 "): bounds %q, %q`, quoted.Lower, quoted.Upper)
	}
	var e map[string]string
	if code := getJSON(t, srv.URL+`/api/scan?to="a`, &e); code != http.StatusBadRequest || !strings.HasPrefix(e["error"], "to: ") {
		t.Errorf("a malformed bound: status %d, %v", code, e)
	}
}

// TestKeySpace checks where keys land in the key space.
func TestKeySpace(t *testing.T) {
	ks := storeKeySpace([][]shale.TableInfo{{{Smallest: []byte("key000"), Largest: []byte("key100")}}, {{Smallest: []byte("key050"), Largest: []byte("key200")}}})
	for _, c := range []struct {
		key  string
		want float64
	}{{"a", 0}, {"key000", 0}, {"key100", 0.5}, {"key200", 1}, {"z", 1}} {
		// After the shared prefix "key", "100" is halfway from "000" to
		// "200", as numbers of their bytes.
		if got := ks.pos([]byte(c.key)); got < c.want-0.01 || got > c.want+0.01 {
			t.Errorf("pos(%s) = %g, want %g", c.key, got, c.want)
		}
	}
	prev := 0.0
	for i := range 200 {
		got := ks.pos(fmt.Appendf(nil, "key%03d", i))
		if got < prev-1e-9 { // equal, but for rounding
			t.Fatalf("pos(key%03d) = %g, before the key below it (%g)", i, got, prev)
		}
		prev = got
	}
	// Decimal keys spread evenly: each byte is scaled to '0'-'9'.
	decimal := storeKeySpace([][]shale.TableInfo{{{Smallest: []byte("key000000"), Largest: []byte("key999999")}}})
	if got := decimal.pos([]byte("key500000")); got < 0.4999 || got > 0.5001 {
		t.Errorf("pos(key500000) in [key000000, key999999] = %g, want 0.5", got)
	}
	if got := storeKeySpace(nil).pos([]byte("k")); got != 0 {
		t.Errorf("in an empty key space, pos = %g", got)
	}
}

// TestWebCommand drives web and web stop, and polls the view while the
// shell loads keys and reopens its store: the view reads the shell's
// current store, never a closed one.
func TestWebCommand(t *testing.T) {
	var out bytes.Buffer
	sh, err := newShell(&out, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.close()
	run := func(line string) string {
		t.Helper()
		out.Reset()
		sh.exec(line)
		return out.String()
	}
	got := run("web")
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)\n.*loopback only`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("web printed %q", got)
	}
	url := m[1]
	if got := run("web"); !strings.Contains(got, "error: the web view is already running at "+url) {
		t.Errorf("web again printed %q", got)
	}

	stop, polled := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var polls int
	var pollErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			if polls == 0 {
				close(polled) // the poller failed: let the test go on to report it
			}
		}()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := http.Get(url + "api/state")
			if err != nil {
				pollErr = err
				return
			}
			var st webState
			err = json.NewDecoder(res.Body).Decode(&st)
			res.Body.Close()
			switch {
			case err != nil:
				pollErr = err
				return
			case res.StatusCode == http.StatusServiceUnavailable: // between a close and an open
			case res.StatusCode != http.StatusOK || len(st.Levels) != shale.NumLevels:
				pollErr = fmt.Errorf("status %d, %d levels: read a closed store?", res.StatusCode, len(st.Levels))
				return
			}
			if polls++; polls == 1 {
				close(polled)
			}
		}
	}()
	// The commands start once a poll has been answered, so that the
	// reopens below race polls.
	select {
	case <-polled:
	case <-time.After(30 * time.Second):
		t.Fatal("no poll answered in 30 s")
	}
	other := filepath.Join(t.TempDir(), "other")
	for _, line := range []string{"load 3000", "bloom 5", "load 3000", "autocompact off", "flush", "open " + other, "load 100", "rowcache 4096"} {
		if got := run(line); strings.Contains(got, "error") {
			t.Errorf("%s: %s", line, got)
		}
	}
	close(stop)
	wg.Wait()
	if pollErr != nil || polls == 0 {
		t.Fatalf("after %d polls: %v", polls, pollErr)
	}

	if got := run("web stop"); got != "stopped the web view at "+url+"\n" {
		t.Errorf("web stop printed %q", got)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("the view still answers after web stop")
	}
	// A name other than loopback's is refused: it is how a page in the
	// browser would reach the view through DNS rebinding.
	req := httptest.NewRequest("GET", "/api/state", nil)
	req.Host = "rebound.example:80"
	rec := httptest.NewRecorder()
	loopbackHostsOnly(webHandler(sh, webPageData{})).ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("a request for host %s got %d, want 403", req.Host, rec.Code)
	}
	for _, host := range []string{"127.0.0.1:8080", "localhost:1", "[::1]:2", "localhost"} {
		req.Host, rec = host, httptest.NewRecorder()
		loopbackHostsOnly(http.NotFoundHandler()).ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound {
			t.Errorf("a request for host %s got %d, want it passed on", host, rec.Code)
		}
	}
	if got := run("web 0.0.0.0:0"); !strings.Contains(got, "which is not loopback, as you asked") {
		t.Errorf("web 0.0.0.0:0 printed %q", got)
	}
	if got := run("web stop"); !strings.HasPrefix(got, "stopped") {
		t.Errorf("web stop printed %q", got)
	}
}
