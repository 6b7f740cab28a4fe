// The live view of a shale store: polls /api/state and draws the tree in
// SVG; the lookup box asks /api/get for a lookup's trace, the scan box
// /api/scan for a bounded scan's, and the tree shows the path of the last
// one asked.
// Plain JavaScript, no libraries: the page must work with no network.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const W = 1000;          // the SVG's width
const PLOT_X = 190;      // where the key space starts
const PLOT_W = W - PLOT_X - 10;
const MEM_H = 44;        // the memtables' row
const ROW_H = 62;        // a level's row
const ROW_GAP = 8;
const LEVELS = 7;
const POLL_MS = 1000;
const MIN_W = 5;         // the least a table is drawn, wide and tall, so that it shows
const MIN_H = 6;

let state = null;        // the last /api/state answer
let trace = null;        // the last /api/get answer
let scan = null;         // the last /api/scan answer
let shown = "";          // whose path the tree shows: "get", "scan" or ""
let selected = 0;        // the clicked table's file number, 0 for none
let lastEventSeq = 0;    // the newest event drawn so far

const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function html(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// bytes renders a byte count in binary units, as kvsh's stats does.
function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

function duration(ns) {
  if (ns < 1e6) return `${(ns / 1e3).toFixed(0)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(1)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

function rowTop(level) { return MEM_H + ROW_GAP + level * (ROW_H + ROW_GAP); }
function keyX(x) { return PLOT_X + x * PLOT_W; }

// drawTree redraws the SVG from state: the memtables, then each level's
// label and tables, then the path of the last lookup or scan over them.
function drawTree() {
  const svg = $("tree");
  svg.replaceChildren();
  svg.setAttribute("height", rowTop(LEVELS) + 4);
  svg.setAttribute("viewBox", `0 0 ${W} ${rowTop(LEVELS) + 4}`);
  const m = state.metrics;

  // Memtables: the mutable one, then those waiting to flush.
  const mems = 1 + m.ImmutableTables;
  const memLabel = el("text", { x: 4, y: 18, class: "label" }, "memtables");
  svg.append(memLabel);
  svg.append(el("text", { x: 4, y: 34, class: "sublabel" }, `${bytes(m.MemTableBytes)} + ${m.ImmutableTables} waiting`));
  const laneH = (MEM_H - 4) / mems;
  for (let i = 0; i < mems; i++) {
    svg.append(el("rect", {
      x: PLOT_X, y: 2 + i * laneH, width: PLOT_W, height: Math.max(laneH - 2, 2),
      class: i === 0 ? "memtable" : "memtable immutable", "data-mem": i,
    }));
  }

  let maxSize = 1;
  for (const l of state.levels) for (const t of l.tables) maxSize = Math.max(maxSize, t.size);

  for (const l of state.levels) {
    const top = rowTop(l.level);
    const g = el("g", { id: `level-${l.level}`, class: "level", "data-level": l.level, "data-files": l.files });
    g.append(el("rect", { x: PLOT_X, y: top, width: PLOT_W, height: ROW_H, class: "row" }));
    const name = `L${l.level}` + (l.base ? " (base)" : "");
    g.append(el("text", { x: 4, y: top + 16, class: "label" }, name));
    g.append(el("text", { x: 4, y: top + 32, class: "sublabel level-files" }, `${l.files} table${l.files === 1 ? "" : "s"}, ${bytes(l.bytes)}`));
    const target = l.target > 0 ? bytes(l.target) : "-";
    g.append(el("text", { x: 4, y: top + 48, class: "sublabel" }, `target ${target}, score ${l.score.toFixed(2)}`));
    const lanes = l.level === 0 ? Math.max(l.tables.length, 1) : 1;
    const lane = ROW_H / lanes;
    l.tables.forEach((t, i) => {
      const w = Math.max(keyX(t.x1) - keyX(t.x0), MIN_W);
      const x = Math.min(keyX(t.x0), PLOT_X + PLOT_W - w);
      const h = Math.min(Math.max((lane - 2) * t.size / maxSize, MIN_H), lane - 1);
      const small = keyX(t.x1) - keyX(t.x0) < MIN_W || (lane - 2) * t.size / maxSize < MIN_H;
      const laneTop = top + (l.level === 0 ? i * lane : 0);
      const r = el("rect", {
        x: x, y: laneTop + lane - 1 - h, width: w, height: h,
        class: "table" + (small ? " small" : "") + (t.fileNum === selected ? " selected" : ""),
        "data-level": l.level, "data-file": t.fileNum,
      });
      r.append(el("title", {}, `${String(t.fileNum).padStart(6, "0")}.sst`));
      r.addEventListener("mouseenter", () => showTable(t, l.level));
      r.addEventListener("mouseleave", () => showTable(findTable(selected), null));
      r.addEventListener("click", () => { selected = t.fileNum; drawTree(); showTable(t, l.level); });
      g.append(r);
    });
    svg.append(g);
  }
  if (shown === "get") drawPath(svg);
  if (shown === "scan") drawScanPath(svg);
}

// findTable returns the table with file number n and its level, or null.
function findTable(n) {
  if (!state || !n) return null;
  for (const l of state.levels) for (const t of l.tables) if (t.fileNum === n) return [t, l.level];
  return null;
}

// showTable fills the table panel with t's details (t may be [t, level]
// from findTable, or null).
function showTable(t, level) {
  const box = $("table-details");
  if (Array.isArray(t)) [t, level] = t;
  if (!t) {
    box.replaceChildren(html("p", { class: "help" }, selected ? `table ${selected} is gone: a compaction replaced it` : "Hover over or click a table."));
    return;
  }
  const rows = [
    ["table", `${String(t.fileNum).padStart(6, "0")}.sst, L${level}`],
    ["keys", `[${t.smallest} .. ${t.largest}${t.largestExclusive ? ")" : "]"}`],
    ["size", bytes(t.size) + (t.compression ? `, ${t.compression} compression` : "")],
    ["entries", `${t.entries}` + (t.rangeDels ? ` + ${t.rangeDels} range tombstones` : "")],
    ["filter", t.filter ? `${t.filter}, ${t.bitsPerKey.toFixed(1)} bits/key` : (t.filterError ? `none (${t.filterError})` : "none")],
    ["filter checks", `${t.filterChecks}`],
    ["skips", `${t.filterSkips} (definitely not: no I/O)`],
    ["false positives", `${t.falsePositives}`],
  ];
  const table = html("table", { class: "kv", "data-file": t.fileNum });
  for (const [k, v] of rows) {
    const tr = html("tr");
    tr.append(html("th", {}, k), html("td", {}, v));
    table.append(tr);
  }
  box.replaceChildren(table);
}

// memLaneY is the middle of the lane of the memtable a step names
// ("memtable", "immutable memtable 2").
function memLaneY(source) {
  const mems = 1 + state.metrics.ImmutableTables;
  const n = source === "memtable" ? 0 : Math.min(parseInt(source.split(" ").pop(), 10) || 0, mems - 1);
  const laneH = (MEM_H - 4) / mems;
  return 2 + n * laneH + laneH / 2;
}

// tableRect is the drawn rect of table n, or null.
function tableRect(n) {
  return n ? document.querySelector(`#tree rect.table[data-file="${n}"]`) : null;
}

// pathPoint is where step s of the lookup is drawn: at the key's position,
// in the lane of its table (a table whose range holds the key is under the
// dot; one whose range does not lies beside it), else in the row of its
// memtable or level.
function pathPoint(s) {
  const x = keyX(trace.x);
  if (s.level < 0) return [x, memLaneY(s.source)];
  const r = tableRect(s.fileNum);
  if (r) return [x, +r.getAttribute("y") + +r.getAttribute("height") / 2 + (s.source.endsWith("row cache") ? 8 : 0)];
  return [x, rowTop(s.level) + ROW_H / 2];
}

// scanPoint is where step s of the scan is drawn: on its table; for a
// memtable, in its lane in the middle of the scan's key range; for a
// level's tables outside the range, left of the level's row.
function scanPoint(s) {
  if (s.level < 0) return [keyX((scan.x0 + scan.x1) / 2), memLaneY(s.source)];
  const r = tableRect(s.fileNum);
  if (r) return [+r.getAttribute("x") + +r.getAttribute("width") / 2, +r.getAttribute("y") + +r.getAttribute("height") / 2];
  return [PLOT_X - 12, rowTop(s.level) + ROW_H / 2];
}

const markClass = {
  "outside key range": "m-outside",
  "filter: definitely not": "m-filterno",
  "false positive": "m-falsepos",
  "found": "m-found",
  "deleted": "m-deleted",
  "filter: maybe": "m-maybe",
  "miss": "m-miss",
};

// scanReasonClasses style the reasons of scan steps (ScanReason's String)
// that this page knows; scanReasonClass gives any other a neutral style.
const scanReasonClasses = {
  "read": "m-read",
  "key range: outside the scan": "m-outside",
  "prefix filter: definitely not": "m-filterno",
  "range filter: definitely not": "m-filterno",
};
function scanReasonClass(reason) {
  return scanReasonClasses[reason] || "m-other";
}

// drawOverlay draws a path over the tree in a group with id: a line through
// points in order, and a numbered dot per point, dots[i] giving its class,
// mark, source and title.
function drawOverlay(svg, id, points, dots) {
  const g = el("g", { id: id });
  if (points.length > 1) {
    g.append(el("polyline", { points: points.map((p) => p.join(",")).join(" "), class: "trace-line" }));
  }
  dots.forEach((d, i) => {
    const [x, y] = points[i];
    const dot = el("g", { class: "trace-point " + d.cls, "data-step": i + 1, "data-mark": d.mark, "data-source": d.source });
    dot.append(el("circle", { cx: x, cy: y, r: 7 }));
    dot.append(el("text", { x: x, y: y + 4, "text-anchor": "middle" }, `${i + 1}`));
    dot.append(el("title", {}, `${i + 1}. ${d.source}: ${d.title}`));
    g.append(dot);
  });
  svg.append(g);
}

// drawPath draws the last lookup's path over the tree, each dot in the
// colour of its step's mark.
function drawPath(svg) {
  drawOverlay(svg, "trace-overlay", trace.steps.map(pathPoint),
    trace.steps.map((s) => ({ cls: markClass[s.mark], mark: s.mark, source: s.source, title: s.outcome })));
}

// drawScanPath draws the last scan over the tree: a band over its key
// range, and its path, each dot in the colour of its step's reason.
function drawScanPath(svg) {
  const x0 = keyX(scan.x0);
  svg.append(el("rect", { id: "scan-band", x: x0, y: 0, width: Math.max(keyX(scan.x1) - x0, 2), height: rowTop(LEVELS) }));
  drawOverlay(svg, "scan-overlay", scan.steps.map(scanPoint),
    scan.steps.map((s) => ({ cls: scanReasonClass(s.reason), mark: s.reason, source: s.source, title: s.outcome })));
}

// drawSteps lists the trace's steps beside the tree.
function drawSteps() {
  const ol = $("path");
  ol.replaceChildren();
  for (const s of trace.steps) {
    const li = html("li", {
      class: "step", "data-source": s.source, "data-mark": s.mark, "data-file": s.fileNum,
      "data-blocks-disk": s.blocksFromDisk, "data-blocks-cache": s.blocksFromCache,
    });
    li.append(html("span", { class: "mark " + markClass[s.mark] }, s.mark), " ");
    li.append(html("b", { class: "source" }, s.source));
    if (s.range) li.append(" ", html("code", {}, s.range));
    li.append(html("div", { class: "outcome" }, s.outcome));
    if (s.blocksFromDisk + s.blocksFromCache > 0) {
      li.append(html("div", { class: "blocks" }, `blocks: ${s.blocksFromDisk} from disk, ${s.blocksFromCache} from cache`));
    }
    ol.append(li);
  }
  const MAX_VALUE = 40;
  let value = trace.value !== undefined ? `: ${trace.value}` : "";
  if (value.length > MAX_VALUE) value = value.slice(0, MAX_VALUE) + `… (${trace.value.length} characters)`;
  $("lookup-result").textContent = `get ${trace.key} => ${trace.result}${value}`;
  ol.setAttribute("data-key", trace.key);
}

async function lookup(ev) {
  ev.preventDefault();
  const key = $("lookup-key").value;
  try {
    const res = await fetch(`/api/get?key=${encodeURIComponent(key)}`);
    const body = await res.json();
    if (!res.ok) throw new Error(body.error || res.statusText);
    trace = body;
    shown = "get";
    drawSteps();
    if (state) drawTree();
  } catch (err) {
    $("lookup-result").textContent = `error: ${err.message}`;
  }
}

// drawScanSteps lists the scan's steps beside the tree, and its result.
function drawScanSteps(query) {
  const ol = $("scan-path");
  ol.replaceChildren();
  let disk = 0, cached = 0;
  for (const s of scan.steps) {
    const li = html("li", {
      class: "step", "data-source": s.source, "data-mark": s.reason, "data-file": s.fileNum, "data-files": s.files || 0,
      "data-entries": s.entries, "data-prefix-checked": s.prefixChecked, "data-range-checked": s.rangeChecked,
      "data-blocks-disk": s.blocksFromDisk, "data-blocks-cache": s.blocksFromCache,
    });
    li.append(html("span", { class: "mark " + scanReasonClass(s.reason) }, s.reason), " ");
    li.append(html("b", { class: "source" }, s.source));
    if (s.range) li.append(" ", html("code", {}, s.range));
    if (s.files) li.append(" ", html("code", {}, `${s.files} table${s.files === 1 ? "" : "s"}`));
    li.append(html("div", { class: "outcome" }, s.outcome));
    ol.append(li);
    disk += s.blocksFromDisk;
    cached += s.blocksFromCache;
  }
  let prefix = "";
  if (scan.prefix) {
    let filters = "prefix filters consulted";
    if (!scan.extractor) filters = "no prefix extractor: prefix filters not consulted";
    else if (!scan.prefixFilters) filters = `not a prefix of ${scan.extractor}: prefix filters not consulted`;
    prefix = ` prefix=${scan.prefix} (${filters})`;
  }
  const result = $("scan-result");
  result.textContent = `scan [${scan.lower || "unbounded"}, ${scan.upper || "unbounded"})${prefix} => ` +
    `${scan.keys} key${scan.keys === 1 ? "" : "s"}; ${disk} block${disk === 1 ? "" : "s"} from disk, ${cached} from cache`;
  result.setAttribute("data-keys", scan.keys);
  for (const [k, v] of Object.entries(query)) ol.setAttribute(`data-${k}`, v);
}

async function scanRange(ev) {
  ev.preventDefault();
  const query = { from: $("scan-from").value, to: $("scan-to").value, prefix: $("scan-prefix").value };
  try {
    const res = await fetch("/api/scan?" + new URLSearchParams(query));
    const body = await res.json();
    if (!res.ok) throw new Error(body.error || res.statusText);
    scan = body;
    shown = "scan";
    drawScanSteps(query);
    if (state) drawTree();
  } catch (err) {
    $("scan-result").textContent = `error: ${err.message}`;
  }
}

function drawMetrics() {
  const m = state.metrics;
  const fpr = m.FilterSkips + m.FilterFalsePositives > 0 ? (100 * m.FilterFalsePositives / (m.FilterSkips + m.FilterFalsePositives)).toFixed(2) : "0.00";
  const rows = [
    ["memtable", `${bytes(m.MemTableBytes)}, +${m.ImmutableTables} waiting to flush`],
    ["WAL written", bytes(m.WALBytes)],
    ["user bytes written", bytes(m.UserBytes)],
    ["write amplification", m.WriteAmp.toFixed(2)],
    ["flushes", `${m.Flushes} (${bytes(m.FlushBytes)})`],
    ["compactions", `${m.Compactions} (+${m.TrivialMoves} moves, +${m.DeleteOnlyCompactions} delete-only); ${bytes(m.CompactionBytesIn)} read, ${bytes(m.CompactionBytesOut)} written`],
    ["stalls", `${duration(m.StallTime)}; slowdowns: ${m.Slowdowns} (${duration(m.SlowdownTime)})`],
    ["block cache", `${m.BlockCacheHits} hits, ${m.BlockCacheMiss} misses, ${bytes(m.BlockCacheBytes)}`],
    ["row cache", `${m.RowCacheHits} hits, ${m.RowCacheMisses} misses, ${bytes(m.RowCacheBytes)}`],
    ["disk reads", `${m.DiskReads} blocks`],
    ["filters", `${m.FilterChecks} checks, ${m.FilterSkips} skips, ${m.FilterFalsePositives} false positives (${fpr}% of absent)`],
    ["in memory", `filters ${bytes(m.FilterMemory)}, indexes ${bytes(m.IndexMemory)}`],
    ["last seqnum", `${m.LastSeqNum}; ${m.Snapshots} open snapshots` + (m.BackgroundOK ? "" : "; BACKGROUND ERROR")],
  ];
  const t = $("metrics");
  t.replaceChildren();
  for (const [k, v] of rows) {
    const tr = html("tr");
    tr.append(html("th", {}, k), html("td", {}, v));
    t.append(tr);
  }
}

// drawEvents lists the events since the store was opened, newest first.
// Every kind is drawn alike, from the time, kind, tables and detail the
// server writes, so a new kind of event needs nothing here.
function drawEvents() {
  const ol = $("events");
  ol.replaceChildren();
  if (state.events.length === 0) {
    ol.append(html("li", { class: "help" }, `none since the store was opened at ${state.opened}`));
  }
  for (const e of state.events) {
    const li = html("li", { class: "event" + (e.seq > lastEventSeq ? " new" : ""), "data-kind": e.kind });
    li.append(html("span", { class: "time" }, e.time), " ", html("b", {}, e.kind), " ");
    li.append(html("code", {}, e.tables), html("span", { class: "detail" }, " " + e.detail));
    ol.append(li);
  }
  if (state.events.length > 0) lastEventSeq = state.events[0].seq;
}

// drawOpened says since when the counters and the events count: kvsh
// reopens the store to change an Open option, and a store's metrics start
// from zero when it opens.
function drawOpened() {
  $("opened").textContent = state.openings > 1
    ? `Reopened by kvsh at ${state.opened}: the counters and the list of events below start from then.`
    : `Opened at ${state.opened}: the counters and the list of events below start from then.`;
}

async function poll() {
  try {
    const res = await fetch("/api/state");
    const body = await res.json();
    if (!res.ok) throw new Error(body.error || res.statusText);
    state = body;
    $("dir").textContent = state.dir;
    $("smallest").textContent = state.smallest;
    $("largest").textContent = state.largest;
    drawTree();
    drawMetrics();
    drawOpened();
    drawEvents();
    if (selected) showTable(findTable(selected));
    $("status").textContent = `updated ${state.time}`;
    $("tree").setAttribute("data-updated", Date.now());
  } catch (err) {
    $("status").textContent = `not updated: ${err.message}`;
  }
  setTimeout(poll, POLL_MS);
}

$("lookup-form").addEventListener("submit", lookup);
$("scan-form").addEventListener("submit", scanRange);
poll();
