package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/shale-db/shale"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "save TestWebBrowser's screenshot as docs/web.png")

// findChromium returns the path of a Chromium (or Chrome) binary, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// drawnLevel is what the page drew for one level.
type drawnLevel struct {
	Level  int      `json:"level"`
	Files  int      `json:"files"`
	Label  string   `json:"label"`
	Tables []uint64 `json:"tables"`
	Xs     []string `json:"xs"` // each table's x, in drawing order
}

// drawnStep is what the page drew for one step of a lookup: its line in
// the list and its dot on the tree.
type drawnStep struct {
	Source     string `json:"source"`
	Mark       string `json:"mark"`
	File       uint64 `json:"file"`
	Outcome    string `json:"outcome"`
	Disk       int    `json:"disk"`
	Cache      int    `json:"cache"`
	DotMark    string `json:"dotMark"`
	DotSource  string `json:"dotSource"`
	DotClasses string `json:"dotClasses"`
}

const drawnLevelsJS = `Array.from(document.querySelectorAll('#tree g.level')).map(g => ({
	level: +g.dataset.level,
	files: +g.dataset.files,
	label: g.querySelector('.level-files').textContent,
	tables: Array.from(g.querySelectorAll('rect.table')).map(r => +r.dataset.file),
	xs: Array.from(g.querySelectorAll('rect.table')).map(r => r.getAttribute('x')),
}))`

const drawnStepsJS = `(() => {
	const dots = Array.from(document.querySelectorAll('#trace-overlay .trace-point'));
	return Array.from(document.querySelectorAll('#path li.step')).map((li, i) => ({
		source: li.dataset.source,
		mark: li.dataset.mark,
		file: +li.dataset.file,
		outcome: li.querySelector('.outcome').textContent,
		disk: +li.dataset.blocksDisk,
		cache: +li.dataset.blocksCache,
		dotMark: dots[i] ? dots[i].dataset.mark : '',
		dotSource: dots[i] ? dots[i].dataset.source : '',
		dotClasses: dots[i] ? dots[i].getAttribute('class') : '',
	}));
})()`

// drawnScanStep is what the page drew for one step of a scan: its line in
// the list and its dot on the tree.
type drawnScanStep struct {
	Source        string `json:"source"`
	Reason        string `json:"reason"`
	File          uint64 `json:"file"`
	Files         int    `json:"files"`
	Entries       int    `json:"entries"`
	PrefixChecked bool   `json:"prefixChecked"`
	RangeChecked  bool   `json:"rangeChecked"`
	Outcome       string `json:"outcome"`
	Disk          int    `json:"disk"`
	Cache         int    `json:"cache"`
	DotMark       string `json:"dotMark"`
	DotSource     string `json:"dotSource"`
	DotClasses    string `json:"dotClasses"`
}

// drawnScan is what the page drew for a scan.
type drawnScan struct {
	Steps  []drawnScanStep `json:"steps"`
	Dots   int             `json:"dots"`
	Keys   int             `json:"keys"`
	Result string          `json:"result"`
	Band   bool            `json:"band"`
}

const drawnScanJS = `(() => {
	const dots = Array.from(document.querySelectorAll('#scan-overlay .trace-point'));
	return {
		steps: Array.from(document.querySelectorAll('#scan-path li.step')).map((li, i) => ({
			source: li.dataset.source,
			reason: li.dataset.mark,
			file: +li.dataset.file,
			files: +li.dataset.files,
			entries: +li.dataset.entries,
			prefixChecked: li.dataset.prefixChecked === 'true',
			rangeChecked: li.dataset.rangeChecked === 'true',
			outcome: li.querySelector('.outcome').textContent,
			disk: +li.dataset.blocksDisk,
			cache: +li.dataset.blocksCache,
			dotMark: dots[i] ? dots[i].dataset.mark : '',
			dotSource: dots[i] ? dots[i].dataset.source : '',
			dotClasses: dots[i] ? dots[i].getAttribute('class') : '',
		})),
		dots: dots.length,
		keys: +document.querySelector('#scan-result').dataset.keys,
		result: document.querySelector('#scan-result').textContent,
		band: document.querySelector('#tree #scan-band') !== null,
	};
})()`

// scanReasonClasses are the page's styles of the reasons it knows.
var scanReasonClasses = map[string]string{
	shale.ScanRead.String():         "m-read",
	shale.ScanKeyRange.String():     "m-outside",
	shale.ScanPrefixFilter.String(): "m-filterno",
	shale.ScanRangeFilter.String():  "m-filterno",
}

// TestWebBrowser loads the view in a real headless Chromium: it checks that
// every level and table is drawn, that the scan box draws TraceScan's path
// and the lookup box TraceGet's, step by step, and saves a screenshot. Without a browser it skips, unless
// the CI environment variable is set: then it fails.
func TestWebBrowser(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		msg := "no Chromium found (chromium, chromium-browser or google-chrome on PATH, or /usr/bin/chromium): install one (apt-get install chromium) to run this test"
		if os.Getenv("CI") == "" {
			t.Skip(msg)
		}
		t.Fatal(msg + "; CI is set, so the test must run")
	}
	sh, out := webTestShell(t)
	out.Reset()
	sh.exec("web")
	m := regexp.MustCompile(`at (http://\S+/)\n`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("web printed %q", out.String())
	}
	url := m[1]

	// Every wait below is bounded by this context: the test fails, never
	// hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, cancel = chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers give /dev/shm 64 MB
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()

	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`#tree[data-updated]`))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}

	// The tree: every level, with its count, and every table, in order.
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[[]drawnLevel](drawnLevelsJS))
	if err != nil {
		t.Fatal(err)
	}
	levels := sh.db.Tables()
	if len(drawn) != len(levels) {
		t.Fatalf("the page drew %d levels, want %d", len(drawn), len(levels))
	}
	for level, tables := range levels {
		d := drawn[level]
		var want []uint64
		for _, ti := range tables {
			want = append(want, ti.FileNum)
		}
		label := fmt.Sprintf("%d table", len(tables))
		if d.Level != level || d.Files != len(tables) || !slices.Equal(d.Tables, want) || !regexp.MustCompile("^"+label).MatchString(d.Label) {
			t.Errorf("L%d drawn as level %d, %d files (%q), tables %v; want %d tables %v", level, d.Level, d.Files, d.Label, d.Tables, len(tables), want)
		}
		if level > 0 && !slices.IsSortedFunc(d.Xs, func(a, b string) int { return cmpFloat(t, a, b) }) {
			t.Errorf("L%d: tables drawn at x %v, not in key order", level, d.Xs)
		}
	}

	// The scan box: each scan's drawn path against TraceScan's.
	kinds := scanKinds{}
	for _, q := range scanQueries(t, sh) {
		// The fields are emptied, then typed into (SetValue cannot set an
		// empty value, and Clear empties only the value attribute).
		clear := `for (const id of ['scan-from', 'scan-to', 'scan-prefix']) document.getElementById(id).value = ''; true`
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](clear)); err != nil {
			t.Fatal(err)
		}
		var typing []chromedp.Action[chromedp.Void]
		for _, f := range []struct{ id, text string }{{"#scan-from", q.from}, {"#scan-to", q.to}, {"#scan-prefix", q.prefix}} {
			if f.text != "" {
				typing = append(typing, chromedp.SendKeys(chromedp.CSS(f.id), f.text))
			}
		}
		err := chromedp.Do(ctx, append(typing,
			chromedp.Click(chromedp.CSS(`#scan-button`)),
			chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#scan-path[data-from=%q][data-to=%q][data-prefix=%q]`, q.from, q.to, q.prefix))),
		)...)
		if err != nil {
			t.Fatalf("scanning %+v: %v", q, err)
		}
		drawn, err := chromedp.Run(ctx, chromedp.Evaluate[drawnScan](drawnScanJS))
		if err != nil {
			t.Fatal(err)
		}
		want, err := sh.db.TraceScan(q.options())
		if err != nil {
			t.Fatal(err)
		}
		if drawn.Keys != want.Keys || drawn.Dots != len(drawn.Steps) || !drawn.Band {
			t.Errorf("scan %+v: %d keys, %d dots for %d steps, band %v; want %d keys", q, drawn.Keys, drawn.Dots, len(drawn.Steps), drawn.Band, want.Keys)
		}
		got := webScan{Keys: want.Keys, Extractor: want.Extractor, PrefixFilters: want.PrefixFilters, X1: 1}
		if want.LowerBound != nil {
			got.Lower = shale.FormatKey(want.LowerBound)
		}
		if want.UpperBound != nil {
			got.Upper = shale.FormatKey(want.UpperBound)
		}
		if len(want.Prefix) > 0 {
			got.Prefix = shale.FormatKey(want.Prefix)
		}
		disk, cached := 0, 0
		for i, s := range drawn.Steps {
			disk, cached = disk+s.Disk, cached+s.Cache
			// The page shows explain scan's words for the step, with the
			// blocks its own scan read (a scan after another reads from the
			// cache what the first read from disk).
			if i < len(want.Steps) {
				w := want.Steps[i]
				w.BlocksFromDisk, w.BlocksFromCache = s.Disk, s.Cache
				if s.Outcome != w.Outcome() {
					t.Errorf("scan %+v, step %d: says %q, want %q", q, i+1, s.Outcome, w.Outcome())
				}
			}
			if s.DotMark != s.Reason || s.DotSource != s.Source || s.DotClasses != "trace-point "+scanReasonClasses[s.Reason] {
				t.Errorf("scan %+v, step %d: listed as %s (%s), drawn as %s (%s, class %q)", q, i+1, s.Source, s.Reason, s.DotSource, s.DotMark, s.DotClasses)
			}
			step := webScanStep{Source: s.Source, FileNum: s.File, Files: s.Files, Reason: s.Reason, PrefixChecked: s.PrefixChecked, RangeChecked: s.RangeChecked,
				Outcome: s.Outcome, Entries: s.Entries, BlocksFromDisk: s.Disk, BlocksFromCache: s.Cache}
			if i < len(want.Steps) { // the level and range are not drawn as text; checkScan compares the rest
				w := want.Steps[i]
				step.Level = w.Level
				if w.FileNum != 0 {
					step.Range = tableRange(w.Smallest, w.Largest, w.LargestExclusive)
				}
			}
			got.Steps = append(got.Steps, step)
		}
		checkScan(t, q, got, want)
		kinds.add(got)
		total := fmt.Sprintf("=> %s; %s from disk, %d from cache", plural(want.Keys, "key"), plural(disk, "block"), cached)
		if !strings.HasSuffix(drawn.Result, total) {
			t.Errorf("scan %+v: the result says %q, want it to end %q", q, drawn.Result, total)
		}
	}
	kinds.check(t)
	// A reason the page does not know (one a later ScanReason adds) is
	// shown in a neutral style.
	neutral, err := chromedp.Run(ctx, chromedp.Evaluate[string](`scanReasonClass("a reason added later")`))
	if err != nil || neutral != "m-other" {
		t.Errorf("an unknown reason gets class %q (%v), want m-other", neutral, err)
	}

	// The lookup box: each key's drawn path against TraceGet's. The key
	// found at the bottom goes last, for the screenshot.
	keys := lookupKeys(sh)
	keys = append(keys[2:], keys[0], keys[1])
	for _, key := range keys {
		err := chromedp.Do(ctx,
			chromedp.SetValue(chromedp.CSS(`#lookup-key`), key),
			chromedp.Click(chromedp.CSS(`#lookup-button`)),
			chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#path[data-key=%q]`, shale.FormatKey([]byte(key))))),
		)
		if err != nil {
			t.Fatalf("looking %s up: %v", key, err)
		}
		steps, err := chromedp.Run(ctx, chromedp.Evaluate[[]drawnStep](drawnStepsJS))
		if err != nil {
			t.Fatal(err)
		}
		want, err := sh.db.TraceGet([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		var got []webStep
		for i, s := range steps {
			if s.DotMark != s.Mark || s.DotSource != s.Source || !regexp.MustCompile(`\btrace-point m-`).MatchString(s.DotClasses) {
				t.Errorf("get %s, step %d: listed as %s (%s), drawn as %s (%s, class %q)", key, i+1, s.Source, s.Mark, s.DotSource, s.DotMark, s.DotClasses)
			}
			got = append(got, webStep{Source: s.Source, Mark: s.Mark, FileNum: s.File, Outcome: s.Outcome, BlocksFromDisk: s.Disk, BlocksFromCache: s.Cache})
		}
		checkTrace(t, got, want)
	}

	// Click a table of the level above the bottom: its details show.
	clicked := levels[shale.NumLevels-2][0]
	// The page redraws the tree every second, so the rect is clicked from
	// within the page: a click through the input layer could land on a
	// node just replaced.
	click := fmt.Sprintf(`document.querySelector('#tree rect.table[data-file="%d"]').dispatchEvent(new MouseEvent('click', {bubbles: true}))`, clicked.FileNum)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](click)); err != nil {
		t.Fatal(err)
	}
	// Each poll rebuilds the details too, so they are read within the page
	// as well: a node found by one call could be gone by the next.
	read := fmt.Sprintf(`document.querySelector('#table-details table[data-file="%d"]')?.textContent ?? ""`, clicked.FileNum)
	details, err := chromedp.Run(ctx, chromedp.Evaluate[string](read))
	if err != nil {
		t.Fatal(err)
	}
	if details == "" {
		t.Fatalf("clicking table %06d did not show its details", clicked.FileNum)
	}
	for _, want := range []string{fmt.Sprintf("%06d.sst", clicked.FileNum), shale.FormatKey(clicked.Smallest), clicked.Filter, fmt.Sprintf("entries%d", clicked.Entries)} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(details) {
			t.Errorf("the details of table %06d do not show %q:\n%s", clicked.FileNum, want, details)
		}
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "web.png")
	if *updateScreenshot {
		path = filepath.Join("..", "..", "docs", "web.png")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// cmpFloat compares two numbers the page wrote as text.
func cmpFloat(t *testing.T, a, b string) int {
	var x, y float64
	if _, err := fmt.Sscan(a, &x); err != nil {
		t.Fatalf("x %q: %v", a, err)
	}
	if _, err := fmt.Sscan(b, &y); err != nil {
		t.Fatalf("x %q: %v", b, err)
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
