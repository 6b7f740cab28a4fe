package main

// The web command: a live, read-only view of the shell's store in a
// browser. The page (web/index.html, web/app.js, web/style.css, embedded in
// the binary) polls /api/state about once a second and draws the tree from
// it; its lookup box asks /api/get for the trace of one lookup, its scan
// box /api/scan for the trace of one bounded scan. Every
// handler only reads: the server answers GET (and HEAD) alone, and no
// handler calls a method of the store that writes.

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shale-db/shale"
)

//go:embed web
var webFiles embed.FS

// webPage is the page's template; its data is a webPageData.
var webPage = template.Must(template.ParseFS(webFiles, "web/index.html"))

// webPageData is what the page's template shows: the address the server
// listens on, and whether that is loopback.
type webPageData struct {
	Addr     string
	Loopback bool
}

// errNoStore is what the view reports while the shell has no store open
// (after a failed reopen, or between the close and the open of a reopen).
var errNoStore = errors.New("no store is open")

// readStore runs fn on the shell's current store and its directory, with
// dbMu read-held so that the shell neither closes nor replaces the store
// meanwhile. Without a store it returns errNoStore.
func (sh *shell) readStore(fn func(db *shale.DB, dir string) error) error {
	sh.dbMu.RLock()
	defer sh.dbMu.RUnlock()
	if sh.db == nil {
		return errNoStore
	}
	return fn(sh.db, sh.dir)
}

// webServer is a running web view.
type webServer struct {
	srv      *http.Server
	url      string
	loopback bool
	served   chan struct{} // closed when Serve returns
}

// startWeb serves the view of sh's store on ln until stop.
func startWeb(sh *shell, ln net.Listener) *webServer {
	addr := ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "localhost"
	}
	w := &webServer{
		url:      "http://" + net.JoinHostPort(host, fmt.Sprint(addr.Port)) + "/",
		loopback: addr.IP.IsLoopback(),
		served:   make(chan struct{}),
	}
	h := webHandler(sh, webPageData{Addr: ln.Addr().String(), Loopback: w.loopback})
	if w.loopback {
		h = loopbackHostsOnly(h)
	}
	w.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(w.served)
		w.srv.Serve(ln) // returns http.ErrServerClosed after stop
	}()
	return w
}

// stop ends the server: requests in flight get a few seconds to finish,
// then every connection is closed.
func (w *webServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if w.srv.Shutdown(ctx) != nil {
		w.srv.Close()
	}
	<-w.served
}

// stopWeb stops the web view, if it runs.
func (sh *shell) stopWeb() {
	if sh.web != nil {
		sh.web.stop()
		sh.web = nil
	}
}

// defaultWebAddr is where web listens without ADDR: loopback, a free port.
const defaultWebAddr = "127.0.0.1:0"

func cmdWeb(sh *shell, args []string, _ map[string]string) error {
	if len(args) == 1 && args[0] == "stop" {
		if sh.web == nil {
			return errors.New("the web view is not running")
		}
		url := sh.web.url
		sh.stopWeb()
		fmt.Fprintf(sh.out, "stopped the web view at %s\n", url)
		return nil
	}
	if sh.web != nil {
		return fmt.Errorf("the web view is already running at %s (web stop ends it)", sh.web.url)
	}
	addr := defaultWebAddr
	if len(args) == 1 {
		addr = args[0]
		if _, _, err := net.SplitHostPort(addr); err != nil {
			addr = net.JoinHostPort(addr, "0") // a host alone: any free port
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	sh.web = startWeb(sh, ln)
	fmt.Fprintf(sh.out, "serving a live, read-only view of the store at %s\n", sh.web.url)
	if sh.web.loopback {
		fmt.Fprintln(sh.out, "it listens on loopback only: other machines cannot reach it. web stop ends it")
	} else {
		fmt.Fprintf(sh.out, "it listens on %s, which is not loopback, as you asked: other machines can reach it. web stop ends it\n", ln.Addr())
	}
	return nil
}

// webHandler routes the view's requests. Only GET (and HEAD) are served:
// the mux answers any other method with 405.
func webHandler(sh *shell, page webPageData) http.Handler {
	static, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := webPage.Execute(w, page); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		var st webState
		err := sh.readStore(func(db *shale.DB, dir string) error {
			st = buildState(db, dir)
			st.Opened, st.Openings = sh.opened.Format(clockFormat), sh.openings
			return nil
		})
		st.Time = time.Now().Format(clockFormat)
		st.Events = sh.events.list()
		writeJSON(w, st, err)
	})
	mux.HandleFunc("GET /api/get", func(w http.ResponseWriter, r *http.Request) {
		var tr webTrace
		err := sh.readStore(func(db *shale.DB, _ string) error {
			key, err := parseWebKey(r.URL.Query().Get("key"))
			if err != nil {
				return err
			}
			t, err := db.TraceGet(key)
			if err != nil {
				return err
			}
			tr = buildTrace(t, storeKeySpace(db.Tables()))
			return nil
		})
		writeJSON(w, tr, err)
	})
	mux.HandleFunc("GET /api/scan", func(w http.ResponseWriter, r *http.Request) {
		var sc webScan
		err := sh.readStore(func(db *shale.DB, _ string) error {
			opts, err := parseWebScan(r.URL.Query())
			if err != nil {
				return err
			}
			t, err := db.TraceScan(opts)
			if err != nil {
				return err
			}
			sc = buildScan(t, storeKeySpace(db.Tables()))
			return nil
		})
		writeJSON(w, sc, err)
	})
	return mux
}

// loopbackHostsOnly answers 403 to a request whose Host is not a loopback
// name. A server on loopback is out of other machines' reach, but a web
// page in the user's browser could point a name of its own at 127.0.0.1
// (DNS rebinding) and read the store through it; such a request carries
// that name as its Host.
func loopbackHostsOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if ip := net.ParseIP(strings.Trim(host, "[]")); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "this view answers requests to a loopback address only", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// writeJSON answers v as JSON, or err as {"error": ...} with status 503
// for errNoStore, 400 otherwise.
func writeJSON(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, errNoStore) {
			status = http.StatusServiceUnavailable
		}
		w.WriteHeader(status)
		v = map[string]string{"error": err.Error()}
	}
	json.NewEncoder(w).Encode(v)
}

// parseWebKey reads the lookup box's key in the shell's syntax: one word,
// quoted or escaped as get's argument would be.
func parseWebKey(s string) ([]byte, error) {
	words, err := splitLine(s)
	if err != nil {
		return nil, err
	}
	if len(words) != 1 {
		return nil, errors.New(`want one key (quote one that holds spaces: "a b")`)
	}
	return []byte(words[0].text), nil
}

// clockFormat is how the view writes a time, kvsh's local time to the
// millisecond: every time on the page is kvsh's, in this one format.
const clockFormat = "15:04:05.000"

// webState is what /api/state answers: the tree, the metrics and the
// recent events.
//
// The metrics are the open store's, which start from zero when kvsh opens
// it: at the start, and at each reopen (bloom, policy, rowcache and the
// other Open options reopen it; so do open, check and repair). The events
// are cleared then too, so that the list and the counters cover the same
// time: since Opened. Openings counts the opens in this session, so the
// page can say that a reopen restarted them.
type webState struct {
	Time     string        `json:"time"`     // kvsh's clock when it answered
	Opened   string        `json:"opened"`   // when kvsh opened the store
	Openings int           `json:"openings"` // 1, then one more at each reopen
	Dir      string        `json:"dir"`
	Levels   []webLevel    `json:"levels"`
	Smallest string        `json:"smallest"` // the store's smallest key, as FormatKey renders it
	Largest  string        `json:"largest"`
	Metrics  shale.Metrics `json:"metrics"`
	Events   []webEvent    `json:"events"` // newest first
}

// webLevel is one level of the tree. Files and Bytes count its tables as
// listed (Tables), Target and Score come from Metrics.
type webLevel struct {
	Level  int        `json:"level"`
	Files  int        `json:"files"`
	Bytes  uint64     `json:"bytes"`
	Target int64      `json:"target"`
	Score  float64    `json:"score"`
	Base   bool       `json:"base"` // the level L0 compacts into
	Tables []webTable `json:"tables"`
}

// webTable is one table, with its key range placed in the store's key
// space: X0 and X1 are the positions of its smallest and largest keys, from
// 0 (the store's smallest key) to 1 (its largest).
type webTable struct {
	FileNum          uint64  `json:"fileNum"`
	Smallest         string  `json:"smallest"`
	Largest          string  `json:"largest"`
	LargestExclusive bool    `json:"largestExclusive"`
	X0               float64 `json:"x0"`
	X1               float64 `json:"x1"`
	Size             uint64  `json:"size"`
	Compression      string  `json:"compression"`
	Entries          uint64  `json:"entries"`
	RangeDels        uint64  `json:"rangeDels"`
	Filter           string  `json:"filter"`
	BitsPerKey       float64 `json:"bitsPerKey"`
	FilterError      string  `json:"filterError,omitempty"`
	FilterChecks     int64   `json:"filterChecks"`
	FilterSkips      int64   `json:"filterSkips"`
	FalsePositives   int64   `json:"falsePositives"`
}

func buildState(db *shale.DB, dir string) webState {
	tables, m := db.Tables(), db.Metrics()
	ks := storeKeySpace(tables)
	st := webState{Dir: dir, Metrics: m, Smallest: shale.FormatKey(ks.lo), Largest: shale.FormatKey(ks.hi)}
	for level, ts := range tables {
		l := webLevel{Level: level, Files: len(ts), Base: level == m.BaseLevel && level > 0, Tables: []webTable{}}
		if level < len(m.Levels) {
			l.Target, l.Score = m.Levels[level].Target, m.Levels[level].Score
		}
		for _, t := range ts {
			l.Bytes += t.Size
			l.Tables = append(l.Tables, webTable{
				FileNum: t.FileNum, Smallest: shale.FormatKey(t.Smallest), Largest: shale.FormatKey(t.Largest),
				LargestExclusive: t.LargestExclusive, X0: ks.pos(t.Smallest), X1: ks.pos(t.Largest),
				Size: t.Size, Compression: t.Compression, Entries: t.Entries, RangeDels: t.RangeDels,
				Filter: t.Filter, BitsPerKey: t.FilterBitsPerKey, FilterError: t.FilterError,
				FilterChecks: t.FilterChecks, FilterSkips: t.FilterSkips, FalsePositives: t.FilterFalsePositives,
			})
		}
		st.Levels = append(st.Levels, l)
	}
	return st
}

// keySpace places keys on a line from the store's smallest key lo (0) to
// its largest hi (1) by their leading bytes. Past the prefix that lo and hi
// share, up to 8 bytes of a key make a number in mixed radix: each byte is
// scaled to the range of bytes that the tables' bounds hold at its position,
// so that keys of decimal digits spread over the line as evenly as keys of
// random bytes. The tables' bounds, whose bytes all lie in those ranges, are
// placed in their order; other keys are placed next to their neighbours.
type keySpace struct {
	lo, hi         []byte
	prefix         int
	ranges         []byteRange // the bytes at positions prefix, prefix+1, ...
	loNum, spanNum float64
}

// byteRange is the range of bytes the tables' bounds hold at one position.
type byteRange struct{ lo, hi byte }

// storeKeySpace is the key space of the tables: from the smallest of their
// smallest keys to the largest of their largest.
func storeKeySpace(levels [][]shale.TableInfo) keySpace {
	var bounds [][]byte
	for _, ts := range levels {
		for _, t := range ts {
			bounds = append(bounds, t.Smallest, t.Largest)
		}
	}
	var ks keySpace
	if len(bounds) == 0 {
		return ks
	}
	ks.lo, ks.hi = slices.MinFunc(bounds, bytes.Compare), slices.MaxFunc(bounds, bytes.Compare)
	for ks.prefix < len(ks.lo) && ks.prefix < len(ks.hi) && ks.lo[ks.prefix] == ks.hi[ks.prefix] {
		ks.prefix++
	}
	for i := ks.prefix; i < ks.prefix+8; i++ {
		r := byteRange{lo: 255}
		for _, b := range bounds {
			if i < len(b) {
				r.lo, r.hi = min(r.lo, b[i]), max(r.hi, b[i])
			}
		}
		if r.lo > r.hi { // no bound is this long
			break
		}
		ks.ranges = append(ks.ranges, r)
	}
	ks.loNum = ks.num(ks.lo)
	ks.spanNum = ks.num(ks.hi) - ks.loNum
	return ks
}

// num is key's number in [0, 1]: its bytes past the prefix as digits, each
// in its position's range. A byte below its range ends the number there; a
// byte above it makes the number the top of the digit before.
func (ks keySpace) num(key []byte) float64 {
	v, unit := 0.0, 1.0
	for i, r := range ks.ranges {
		if ks.prefix+i >= len(key) {
			break
		}
		b, radix := key[ks.prefix+i], float64(int(r.hi)-int(r.lo)+1)
		switch {
		case b < r.lo:
			return v
		case b > r.hi:
			return v + unit
		}
		unit /= radix
		v += unit * float64(b-r.lo)
	}
	return v
}

// pos is key's position in the key space, from 0 to 1; keys outside it are
// clamped to its ends. A key space of one key (or none) is all at 0.
func (ks keySpace) pos(key []byte) float64 {
	switch {
	case bytes.Compare(key, ks.lo) <= 0 || ks.spanNum <= 0:
		return 0
	case bytes.Compare(key, ks.hi) >= 0:
		return 1
	}
	return min(max((ks.num(key)-ks.loNum)/ks.spanNum, 0), 1)
}

// webTrace is what /api/get answers: LookupTrace, step by step, with the
// keys rendered for people and each step's mark.
type webTrace struct {
	Key    string    `json:"key"`
	X      float64   `json:"x"` // the key's position in the store's key space
	Result string    `json:"result"`
	Value  string    `json:"value,omitempty"`
	Steps  []webStep `json:"steps"`
}

// webStep is one TraceStep.
type webStep struct {
	Source          string `json:"source"`
	Level           int    `json:"level"`   // -1: a memtable
	FileNum         uint64 `json:"fileNum"` // 0: a memtable, or a level as a whole
	Range           string `json:"range,omitempty"`
	Outcome         string `json:"outcome"`
	Mark            string `json:"mark"`
	BlocksFromDisk  int    `json:"blocksFromDisk"`
	BlocksFromCache int    `json:"blocksFromCache"`
}

// The marks of a lookup's steps, which the page colours.
const (
	markOutside   = "outside key range"
	markFilterNo  = "filter: definitely not"
	markFalsePos  = "false positive"
	markFound     = "found"
	markDeleted   = "deleted"
	markFilterYes = "filter: maybe" // the row cache answered next
	markMiss      = "miss"          // a memtable, or a table without a filter, without the key
)

// stepMark names what step i of t decided.
func stepMark(t *shale.LookupTrace, i int) string {
	s := t.Steps[i]
	switch {
	case i == len(t.Steps)-1 && strings.HasSuffix(t.Result, " in "+s.Source): // the step that answered
		if strings.HasPrefix(t.Result, "found") {
			return markFound
		}
		return markDeleted
	case s.OutsideRange:
		return markOutside
	case s.FilterSkipped:
		return markFilterNo
	case s.FalsePositive:
		return markFalsePos
	case s.FilterChecked:
		return markFilterYes
	}
	return markMiss
}

func buildTrace(t *shale.LookupTrace, ks keySpace) webTrace {
	tr := webTrace{Key: shale.FormatKey(t.Key), X: ks.pos(t.Key), Result: t.Result, Steps: []webStep{}}
	if t.Value != nil {
		tr.Value = shale.FormatKey(t.Value)
	}
	for i, s := range t.Steps {
		ws := webStep{
			Source: s.Source, Level: s.Level, FileNum: s.FileNum, Outcome: s.Outcome, Mark: stepMark(t, i),
			BlocksFromDisk: s.BlocksFromDisk, BlocksFromCache: s.BlocksFromCache,
		}
		if s.FileNum != 0 && !s.RowCacheHit {
			ws.Range = tableRange(s.Smallest, s.Largest, s.LargestExclusive)
		}
		tr.Steps = append(tr.Steps, ws)
	}
	return tr
}

// tableRange renders a table's key range as explain does: "[a .. z]", or
// "[a .. z)" when its largest key is exclusive.
func tableRange(smallest, largest []byte, largestExclusive bool) string {
	end := "]"
	if largestExclusive {
		end = ")"
	}
	return fmt.Sprintf("[%s .. %s%s", shale.FormatKey(smallest), shale.FormatKey(largest), end)
}

// parseWebScan reads the scan box's FROM, TO and PREFIX (query parameters
// from, to and prefix) as the IterOptions of the scan: each a key in the
// shell's syntax, as for the lookup box; an empty FROM or TO is unbounded,
// an empty PREFIX is none.
func parseWebScan(q url.Values) (*shale.IterOptions, error) {
	var keys [3][]byte
	for i, name := range []string{"from", "to", "prefix"} {
		v := q.Get(name)
		if strings.TrimSpace(v) == "" {
			continue
		}
		k, err := parseWebKey(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		keys[i] = k
	}
	return &shale.IterOptions{LowerBound: keys[0], UpperBound: keys[1], Prefix: keys[2]}, nil
}

// webScan is what /api/scan answers: ScanTrace, step by step, with the keys
// rendered for people.
type webScan struct {
	// Lower and Upper are the scan's bounds, intersected with Prefix's
	// keys; "" is unbounded (FormatKey renders the empty key as "").
	Lower         string `json:"lower,omitempty"`
	Upper         string `json:"upper,omitempty"`
	Prefix        string `json:"prefix,omitempty"`
	Extractor     string `json:"extractor,omitempty"`
	PrefixFilters bool   `json:"prefixFilters"`
	// X0 and X1 place the bounds in the store's key space (0 and 1 when
	// unbounded).
	X0    float64       `json:"x0"`
	X1    float64       `json:"x1"`
	Keys  int           `json:"keys"` // the keys the scan returned
	Steps []webScanStep `json:"steps"`
}

// webScanStep is one ScanStep. Reason is the ScanReason's String: the page
// shows whatever reason the server sends, so a new one needs no change here.
type webScanStep struct {
	Source          string `json:"source"`
	Level           int    `json:"level"`   // -1: a memtable
	FileNum         uint64 `json:"fileNum"` // 0: a memtable, or a level's tables outside the bounds
	Range           string `json:"range,omitempty"`
	Files           int    `json:"files,omitempty"` // the tables of a level step
	Reason          string `json:"reason"`
	PrefixChecked   bool   `json:"prefixChecked"`
	RangeChecked    bool   `json:"rangeChecked"`
	Outcome         string `json:"outcome"` // ScanStep.Outcome, as explain scan words it
	Entries         int    `json:"entries"`
	BlocksFromDisk  int    `json:"blocksFromDisk"`
	BlocksFromCache int    `json:"blocksFromCache"`
}

func buildScan(t *shale.ScanTrace, ks keySpace) webScan {
	sc := webScan{Extractor: t.Extractor, PrefixFilters: t.PrefixFilters, X1: 1, Keys: t.Keys, Steps: []webScanStep{}}
	if t.LowerBound != nil {
		sc.Lower, sc.X0 = shale.FormatKey(t.LowerBound), ks.pos(t.LowerBound)
	}
	if t.UpperBound != nil {
		sc.Upper, sc.X1 = shale.FormatKey(t.UpperBound), ks.pos(t.UpperBound)
	}
	if len(t.Prefix) > 0 {
		sc.Prefix = shale.FormatKey(t.Prefix)
	}
	for _, s := range t.Steps {
		ws := webScanStep{
			Source: s.Source, Level: s.Level, FileNum: s.FileNum, Files: s.Files, Reason: s.Reason.String(),
			PrefixChecked: s.PrefixChecked, RangeChecked: s.RangeChecked, Outcome: s.Outcome(), Entries: s.Entries, BlocksFromDisk: s.BlocksFromDisk, BlocksFromCache: s.BlocksFromCache,
		}
		if s.FileNum != 0 {
			ws.Range = tableRange(s.Smallest, s.Largest, s.LargestExclusive)
		}
		sc.Steps = append(sc.Steps, ws)
	}
	return sc
}

// maxWebEvents is how many recent events the view keeps: a flush or a
// compaction comes with an event for each table and WAL it creates or
// deletes.
const maxWebEvents = 100

// eventRing keeps the store's recent events for the view: flushes,
// compactions, write stalls, background errors, and the tables and WALs
// created and deleted. The store's EventListener (see listener) fills it from the
// background goroutines; the shell clears it when it opens a store, whose
// metrics start from zero. Its sequence numbers go on across clears, so the
// page tells new events from those it has drawn.
type eventRing struct {
	mu     sync.Mutex
	seq    int64
	events []webEvent // oldest first
}

// webEvent is one event of the store. The page draws every kind alike,
// from Time, Kind, Tables and Detail, so a new kind of event needs only a
// callback in listener that fills them; Inputs, Outputs and the sizes are
// there for the kinds that have them.
type webEvent struct {
	Seq  int64  `json:"seq"`
	Time string `json:"time"` // kvsh's clock, in clockFormat
	// Kind is "flush", a shale.CompactionInfo's Kind, "write stall",
	// "write stall end", "background error", "table created", "table
	// deleted", "WAL created" or "WAL deleted".
	Kind     string       `json:"kind"`
	Tables   string       `json:"tables"` // the tables it read and wrote: "L0:5 L6:3 → L6:7"
	Detail   string       `json:"detail"` // sizes, how long it took, why
	Reason   string       `json:"reason,omitempty"`
	Inputs   []webEventIO `json:"inputs"`
	Outputs  []webEventIO `json:"outputs"`
	BytesIn  int64        `json:"bytesIn"`
	BytesOut int64        `json:"bytesOut"`
	Millis   float64      `json:"millis"` // how long it took; 0 for an instant
}

type webEventIO struct {
	Level   int    `json:"level"`
	FileNum uint64 `json:"fileNum"`
	Size    uint64 `json:"size"`
}

func eventIOs(ts []shale.EventTable) []webEventIO {
	ios := []webEventIO{}
	for _, t := range ts {
		ios = append(ios, webEventIO{Level: t.Level, FileNum: t.FileNum, Size: t.Size})
	}
	return ios
}

// listener returns the EventListener that records into r.
func (r *eventRing) listener() *shale.EventListener {
	return &shale.EventListener{
		FlushEnd: func(fi shale.FlushInfo) {
			e := webEvent{Kind: "flush", Inputs: []webEventIO{}, Outputs: eventIOs([]shale.EventTable{fi.Output}),
				BytesOut: int64(fi.Output.Size), Millis: millis(fi.Duration)}
			e.Tables = "memtable → " + eventTablesText(e.Outputs)
			e.Detail = fmt.Sprintf("%s written, %.1f ms", formatSize(e.BytesOut), e.Millis)
			r.add(e, time.Now())
		},
		CompactionEnd: func(ci shale.CompactionInfo) {
			e := webEvent{Kind: ci.Kind, Reason: ci.Reason, Inputs: eventIOs(ci.Inputs), Outputs: eventIOs(ci.Outputs),
				BytesIn: ci.BytesIn, BytesOut: ci.BytesOut, Millis: millis(ci.Duration)}
			e.Tables = eventTablesText(e.Inputs) + " → " + eventTablesText(e.Outputs)
			e.Detail = fmt.Sprintf("%s in, %s written, %.1f ms", formatSize(e.BytesIn), formatSize(e.BytesOut), e.Millis)
			if e.Reason != "" {
				e.Detail += ": " + e.Reason
			}
			r.add(e, time.Now())
		},
		WriteStallBegin: func(i shale.WriteStallBeginInfo) { r.note("write stall", "", i.Reason, 0) },
		WriteStallEnd:   func(i shale.WriteStallEndInfo) { r.note("write stall end", "", "", i.Duration) },
		BackgroundError: func(err error) { r.note("background error", "", err.Error(), 0) },
		TableCreated: func(i shale.TableCreateInfo) {
			r.note("table created", fmt.Sprintf("L%d:%d", i.Table.Level, i.Table.FileNum),
				fmt.Sprintf("%s (%s)", formatSize(int64(i.Table.Size)), i.Reason), 0)
		},
		TableDeleted: func(i shale.TableDeleteInfo) {
			r.note("table deleted", fmt.Sprint(i.FileNum), fileNote(i.Reason, i.Err), 0)
		},
		WALCreated: func(i shale.WALCreateInfo) { r.note("WAL created", fmt.Sprint(i.FileNum), "", 0) },
		WALDeleted: func(i shale.WALDeleteInfo) { r.note("WAL deleted", fmt.Sprint(i.FileNum), fileNote("", i.Err), 0) },
	}
}

// note adds an event without inputs or outputs: tables names the table or
// WAL it is about (or is empty), and detail says what happened, or, for an
// event that took time d (a write stall's end), how long it took.
func (r *eventRing) note(kind, tables, detail string, d time.Duration) {
	e := webEvent{Kind: kind, Tables: tables, Detail: detail, Inputs: []webEventIO{}, Outputs: []webEventIO{}, Millis: millis(d)}
	if d > 0 {
		e.Detail = fmt.Sprintf("%.1f ms", e.Millis)
	}
	r.add(e, time.Now())
}

// fileNote says why a file was deleted, and the removal's error if it
// failed.
func fileNote(reason string, err error) string {
	s := reason
	if err != nil {
		if s != "" {
			s += ": "
		}
		s += "removal failed: " + err.Error()
	}
	return s
}

// eventTablesText names tables as the event list shows them: "L0:5 L6:3",
// or "nothing".
func eventTablesText(ios []webEventIO) string {
	if len(ios) == 0 {
		return "nothing"
	}
	names := make([]string, len(ios))
	for i, t := range ios {
		names[i] = fmt.Sprintf("L%d:%d", t.Level, t.FileNum)
	}
	return strings.Join(names, " ")
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// add records e, which happened at t.
func (r *eventRing) add(e webEvent, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	e.Seq, e.Time = r.seq, t.Format(clockFormat)
	if len(r.events) == maxWebEvents {
		r.events = append(r.events[:0], r.events[1:]...)
	}
	r.events = append(r.events, e)
}

// list returns the events, newest first.
func (r *eventRing) list() []webEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := make([]webEvent, len(r.events))
	for i, e := range r.events {
		list[len(list)-1-i] = e
	}
	return list
}

// clear forgets the events, keeping the sequence numbers going.
func (r *eventRing) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}
