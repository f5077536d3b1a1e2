// kubera's live UI: state from the server-sent-event stream (services/ui/stream.py),
// drawn at most once per animation frame. No third-party code: the heatmap and the chart
// are canvases drawn here, every other view is a table filled with textContent.
"use strict";

const PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];
const MAX_ROWS = 200; // rows a pod table shows (the count says how many more)
const MAX_FEED = 150; // lines the event feed keeps
const HISTORY = 300; // seconds the chart shows

const S = {
  nodes: new Map(), // name -> node delta
  pods: new Map(), // ns/name -> pod delta
  leases: new Map(), // ns/name -> lease delta
  slices: new Map(), // name -> ResourceSlice delta (DRA)
  claims: new Map(), // ns/name -> ResourceClaim delta (its allocated devices)
  devices: new Map(), // node name -> {"dra:DRIVER": devices} of the slices naming it
  devicesUsed: new Map(), // node name -> {"dra:DRIVER": devices allocated}
  replicas: [], // every replicated component's replicas (api/replicas)
  used: new Map(), // node name -> {resource: amount} of the pods counted on it
  podsOn: new Map(), // node name -> pods counted on it
  synced: new Set(),
  selected: "", // ns/name whose trace is shown
  binds: 0, // binds in the current second
  lats: [], // creation->scheduled seconds of this second's binds
  series: [], // [{t, binds, pending, lat}]
};
let dirty = new Set(["all"]);
const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------ state

function counted(p) {
  return p && p.node && !p.gone && p.phase !== "Succeeded" && p.phase !== "Failed";
}

function addUse(p, sign) {
  const u = S.used.get(p.node) || {};
  for (const [r, v] of Object.entries(p.req || {})) u[r] = (u[r] || 0) + sign * v;
  S.used.set(p.node, u);
  S.podsOn.set(p.node, (S.podsOn.get(p.node) || 0) + sign);
}

function applyPod(d) {
  const key = d.ns + "/" + d.name;
  const prev = S.pods.get(key);
  if (counted(prev)) addUse(prev, -1);
  if (d.gone) {
    S.pods.delete(key);
  } else {
    S.pods.set(key, d);
    if (counted(d)) addUse(d, 1);
    if (S.synced.has("pods") && d.node && (!prev || !prev.node)) {
      S.binds++;
      if (d.lat !== undefined) S.lats.push(d.lat);
    }
  }
  dirty.add("pods");
  if ((prev && prev.node) || d.node) dirty.add("nodes");
  if (key === S.selected) dirty.add("selected");
}

function applyNode(d) {
  const prev = S.nodes.get(d.name);
  if (d.gone) {
    S.nodes.delete(d.name);
    feed("Normal", "node/" + d.name, "deleted");
  } else {
    S.nodes.set(d.name, d);
    if (S.synced.has("nodes")) nodeChanges(prev, d);
  }
  dirty.add("nodes");
}

function nodeChanges(prev, d) {
  if (!prev) return feed("Normal", "node/" + d.name, "registered");
  const obj = "node/" + d.name;
  if (prev.ready !== d.ready) feed(d.ready === "True" ? "Normal" : "Warning", obj, "Ready=" + d.ready);
  for (const c of d.pressure) if (!prev.pressure.includes(c)) feed("Warning", obj, c);
  for (const c of prev.pressure) if (!d.pressure.includes(c)) feed("Normal", obj, c + " cleared");
  for (const t of d.taints) if (!prev.taints.includes(t)) feed("Warning", obj, "tainted " + t);
  for (const t of prev.taints) if (!d.taints.includes(t)) feed("Normal", obj, "untainted " + t);
  if (prev.unsched !== d.unsched) feed("Normal", obj, d.unsched ? "cordoned" : "uncordoned");
}

function applyLease(d) {
  const key = d.ns + "/" + d.name;
  const prev = S.leases.get(key);
  if (d.gone) S.leases.delete(key);
  else {
    S.leases.set(key, d);
    if (prev && prev.holder !== d.holder) {
      const li = document.createElement("li");
      li.append(timeEl(), `${key}: ${prev.holder || "(none)"} → ${d.holder || "(none)"}` +
        ` (transition ${d.transitions})`);
      $("failovers").prepend(li);
      $("failovers-empty").hidden = true;
      loadReplicas();
    }
  }
  dirty.add("leases");
}

function applyEvent(d) {
  feed(d.type, d.obj, `${d.reason}: ${d.msg}`);
}

function timeEl() {
  const t = document.createElement("time");
  t.textContent = new Date().toLocaleTimeString();
  return t;
}

function feed(type, obj, text) {
  $("events-empty").hidden = true;
  const li = document.createElement("li");
  li.className = type;
  li.append(timeEl(), `${obj} ${text}`);
  const ol = $("events");
  ol.prepend(li);
  while (ol.childElementCount > MAX_FEED) ol.lastElementChild.remove();
}

function applySlice(d) {
  if (d.gone) S.slices.delete(d.name);
  else S.slices.set(d.name, d);
  dirty.add("dra");
}

function applyClaim(d) {
  const key = d.ns + "/" + d.name;
  if (d.gone) S.claims.delete(key);
  else S.claims.set(key, d);
  dirty.add("dra");
}

// DRA devices per node: a node has the devices of the slices naming it; a claim's device
// counts on the node of its pool (driver/pool -> the node of that pool's slices).
function countDevices() {
  S.devices.clear();
  S.devicesUsed.clear();
  const poolNode = new Map();
  for (const sl of S.slices.values()) {
    if (!sl.node) continue;
    const r = "dra:" + sl.driver;
    const m = S.devices.get(sl.node) || {};
    m[r] = (m[r] || 0) + sl.devices;
    S.devices.set(sl.node, m);
    poolNode.set(sl.driver + "/" + sl.pool, sl.node);
  }
  for (const c of S.claims.values()) {
    for (const [driver, pool] of c.devices) {
      const node = poolNode.get(driver + "/" + pool);
      if (!node) continue;
      const m = S.devicesUsed.get(node) || {};
      m["dra:" + driver] = (m["dra:" + driver] || 0) + 1;
      S.devicesUsed.set(node, m);
    }
  }
}

function allocOf(n, r) {
  return n.alloc[r] || (S.devices.get(n.name) || {})[r] || 0;
}

function usedOf(name, r) {
  return (S.used.get(name) || {})[r] || (S.devicesUsed.get(name) || {})[r] || 0;
}

const APPLY = {
  pod: applyPod,
  node: applyNode,
  lease: applyLease,
  event: applyEvent,
  slice: applySlice,
  claim: applyClaim,
};

function reset(resource) {
  if (resource === "pods" || resource === "all") {
    S.pods.clear();
    S.used.clear();
    S.podsOn.clear();
  }
  if (resource === "nodes" || resource === "all") S.nodes.clear();
  if (resource === "leases" || resource === "all") S.leases.clear();
  if (resource === "resourceslices" || resource === "all") S.slices.clear();
  if (resource === "resourceclaims" || resource === "all") S.claims.clear();
  if (resource === "all") S.synced.clear();
  else S.synced.delete(resource);
  dirty.add("all");
}

// ------------------------------------------------------------------ the stream

function connect() {
  const es = new EventSource("api/stream");
  es.addEventListener("hello", (e) => {
    reset("all");
    $("user").textContent = JSON.parse(e.data).user;
    setStatus("live", "live");
  });
  es.addEventListener("deltas", (e) => {
    for (const d of JSON.parse(e.data)) APPLY[d.t](d);
    schedule();
  });
  es.addEventListener("synced", (e) => {
    const resource = JSON.parse(e.data).resource;
    S.synced.add(resource);
    if (resource === "leases") loadReplicas();
    dirty.add("all");
    schedule();
  });
  es.addEventListener("schedulers", (e) => {
    drawSchedulers(JSON.parse(e.data));
  });
  es.addEventListener("reset", (e) => {
    reset(JSON.parse(e.data).resource);
    schedule();
  });
  es.onerror = () => setStatus("down", es.readyState === 2 ? "disconnected" : "reconnecting…");
}

function setStatus(cls, text) {
  const el = $("status");
  el.className = "status " + cls;
  el.textContent = text;
}

// ------------------------------------------------------------------ drawing

let frameRequested = false;
const BIG = 5000; // pods past which the pod tables are redrawn at most once a second
let lastTables = 0;
let tablesLater = 0;
function schedule() {
  if (!frameRequested) {
    frameRequested = true;
    requestAnimationFrame(draw);
  }
}

// How long each draw took (ms, the last 600): what a scale test reads.
window.kuberaDrawMs = [];

function draw() {
  frameRequested = false;
  const t0 = performance.now();
  const all = dirty.has("all");
  if (all || dirty.has("dra")) countDevices();
  if (all || dirty.has("nodes") || dirty.has("dra")) drawHeatmap();
  if (all || dirty.has("pods")) {
    drawCounts();
    // The tables sort every pod: with many, at most once a second (the counts stay live).
    const now = performance.now();
    if (all || S.pods.size < BIG || now - lastTables > 1000 || dirty.has("filter")) {
      lastTables = now;
      drawPending();
      drawPods();
    } else if (!tablesLater) {
      tablesLater = setTimeout(() => { tablesLater = 0; dirty.add("pods"); schedule(); }, 1000);
    }
  }
  if (all || dirty.has("leases")) drawLeases();
  if (dirty.has("selected") && S.selected) loadTrace(S.selected, false);
  dirty = new Set();
  window.kuberaDrawMs.push(performance.now() - t0);
  if (window.kuberaDrawMs.length > 600) window.kuberaDrawMs.shift();
}

function fmt(resource, v) {
  if (resource === "cpu") return v % 1000 === 0 ? `${v / 1000}` : `${v}m`;
  if (resource === "memory" || resource === "ephemeral-storage") {
    const units = ["", "Ki", "Mi", "Gi", "Ti"];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return `${Math.round(v * 10) / 10}${units[i]}`;
  }
  return `${v}`;
}

function rows(tbody, items, make) {
  const frag = document.createDocumentFragment();
  for (const it of items) frag.append(make(it));
  tbody.replaceChildren(frag);
}

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function drawCounts() {
  const by = Object.fromEntries(PHASES.map((p) => [p, 0]));
  let pending = 0;
  for (const p of S.pods.values()) {
    by[p.phase] = (by[p.phase] || 0) + 1;
    if (p.phase === "Pending" && !p.node) pending++;
  }
  $("pod-count").textContent = S.pods.size;
  $("pending-count").textContent = pending;
  const max = Math.max(1, ...Object.values(by));
  rows($("phases").tBodies[0], Object.keys(by), (phase) => {
    const tr = document.createElement("tr");
    tr.className = "phase-" + phase;
    tr.dataset.phase = phase;
    const bar = document.createElement("span");
    bar.className = "bar";
    bar.style.width = `${Math.round((160 * by[phase]) / max)}px`;
    const td = document.createElement("td");
    td.append(bar);
    tr.append(cell(phase), cell(`${by[phase]}`, "num count"), td);
    return tr;
  });
  const busiest = [...S.podsOn.entries()].filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 5);
  rows($("busiest").tBodies[0], busiest, ([node, n]) => {
    const tr = document.createElement("tr");
    const alloc = (S.nodes.get(node) || { alloc: {} }).alloc.pods;
    tr.append(cell(node), cell(alloc ? `${n} / ${alloc}` : `${n}`, "num"));
    return tr;
  });
}

function podRow(key, p, cols) {
  const tr = document.createElement("tr");
  tr.className = "pod" + (key === S.selected ? " selected" : "");
  tr.dataset.pod = key;
  tr.append(...cols.map((c) => cell(c)));
  tr.addEventListener("click", () => select(key));
  return tr;
}

function drawPending() {
  const pending = [];
  for (const [key, p] of S.pods) if (p.phase === "Pending" && !p.node) pending.push([key, p]);
  pending.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const shown = pending.slice(0, MAX_ROWS);
  $("pending-shown").textContent = pending.length > shown.length
    ? `(first ${shown.length} of ${pending.length})` : `(${pending.length})`;
  rows($("pending").tBodies[0], shown, ([key, p]) => {
    let why = p.why || (S.synced.has("pods") ? "not tried yet" : "");
    if (p.nominated) why += ` (nominated ${p.nominated})`;
    return podRow(key, p, [key, why]);
  });
}

function drawPods() {
  const q = $("pod-filter").value.trim().toLowerCase();
  const found = [];
  for (const [key, p] of S.pods) {
    if (!q || key.toLowerCase().includes(q) || p.phase.toLowerCase() === q ||
        (p.node && p.node.toLowerCase().includes(q))) found.push([key, p]);
  }
  found.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const shown = found.slice(0, MAX_ROWS);
  $("pods-more").textContent = found.length > shown.length
    ? `${found.length - shown.length} more: narrow the filter` : "";
  rows($("pods").tBodies[0], shown, ([key, p]) =>
    podRow(key, p, [key, p.del ? `${p.phase} (terminating)` : p.phase, p.node || "—"]));
}

function drawLeases() {
  const items = [...S.leases.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const body = $("leaders").tBodies[0];
  const frag = document.createDocumentFragment();
  for (const [key, l] of items) {
    const tr = document.createElement("tr");
    tr.dataset.lease = key;
    const renewed = l.renew ? new Date(l.renew).toLocaleTimeString() : "—";
    tr.append(cell(key), cell(l.holder || "(none)"), cell(`${l.transitions || 0}`, "num"),
      cell(renewed));
    frag.append(tr);
    const reps = S.replicas.filter((r) => r.lease === key);
    if (!reps.length) continue;
    const sub = document.createElement("tr");
    sub.className = "replicas";
    const td = document.createElement("td");
    td.colSpan = 4;
    for (const r of reps.sort((a, b) => (a.identity < b.identity ? -1 : 1))) {
      const role = !r.alive ? "gone" : r.identity === l.holder ? "leader" : "standby";
      const t = r.last_term;
      const termText = !t ? "" : `; term ${t.token} acquired ` +
        new Date(t.acquired_at * 1000).toLocaleTimeString() +
        (t.takeover_seconds !== null ? `, ${t.takeover_seconds} s after the lease was free` : "") +
        (t.first_bind_seconds !== null ? `, first bind ${t.first_bind_seconds} s later` : "");
      const span = text("span", `${r.identity} (${role}, pid ${r.pid}` +
        `${r.host ? " on " + r.host : ""}${termText})`, "replica " + role);
      td.append(span);
    }
    sub.append(td);
    frag.append(sub);
  }
  body.replaceChildren(frag);
}

let replicasSeq = 0;
async function loadReplicas() {
  const seq = ++replicasSeq;
  const resp = await fetch("api/replicas");
  if (!resp.ok || seq !== replicasSeq) return;
  S.replicas = (await resp.json()).replicas;
  dirty.add("leases");
  schedule();
}

// ------------------------------------------------------------------ the heatmap

// YlOrRd stops: 0 (idle) .. 1 (full); above 1 (overcommitted): purple.
const RAMP = [[255, 255, 204], [254, 217, 118], [253, 141, 60], [227, 26, 28], [128, 0, 38]];
function color(ratio) {
  if (ratio > 1) return "#6a1b9a";
  const x = Math.max(0, ratio) * (RAMP.length - 1);
  const i = Math.min(Math.floor(x), RAMP.length - 2);
  const f = x - i;
  const c = RAMP[i].map((v, k) => Math.round(v + f * (RAMP[i + 1][k] - v)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

let layout = { zones: [], cell: 10 };

function resources() {
  const names = new Set(["cpu", "memory", "pods"]);
  for (const n of S.nodes.values()) for (const r of Object.keys(n.alloc)) names.add(r);
  for (const m of S.devices.values()) for (const r of Object.keys(m)) names.add(r);
  return [...names].sort((a, b) => {
    const order = ["cpu", "memory", "pods", "ephemeral-storage"];
    const ia = order.indexOf(a), ib = order.indexOf(b);
    return (ia < 0 ? 9 : ia) - (ib < 0 ? 9 : ib) || (a < b ? -1 : 1);
  });
}

function syncResourceOptions() {
  const sel = $("resource");
  const want = resources();
  const have = [...sel.options].map((o) => o.value);
  if (want.join() === have.join()) return;
  const cur = sel.value || "cpu";
  sel.replaceChildren(...want.map((r) => new Option(r, r)));
  sel.value = want.includes(cur) ? cur : "cpu";
}

function drawHeatmap() {
  $("node-count").textContent = S.nodes.size;
  syncResourceOptions();
  const resource = $("resource").value || "cpu";
  const canvas = $("heatmap");
  const width = canvas.parentElement.clientWidth || 800;
  const zones = new Map();
  for (const n of S.nodes.values()) {
    const z = n.zone || "(no zone)";
    if (!zones.has(z)) zones.set(z, []);
    zones.get(z).push(n);
  }
  const names = [...zones.keys()].sort();
  // The largest cell (28 px down to 3) that keeps the map under ~520 px high.
  const LABEL = 20;
  let size = 28;
  for (; size > 3; size--) {
    const perRow = Math.max(1, Math.floor(width / size));
    let h = 0;
    for (const z of names) h += LABEL + Math.ceil(zones.get(z).length / perRow) * size;
    if (h <= 520) break;
  }
  const perRow = Math.max(1, Math.floor(width / size));
  let height = 0;
  const blocks = [];
  for (const z of names) {
    const ns = zones.get(z).sort((a, b) => (a.name < b.name ? -1 : 1));
    blocks.push({ zone: z, nodes: ns, y: height + LABEL });
    height += LABEL + Math.ceil(ns.length / perRow) * size;
  }
  height = Math.max(height, 40);
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  canvas.style.height = height + "px";
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, height);
  g.font = "12px system-ui, sans-serif";
  g.textBaseline = "middle";
  if (!S.nodes.size) {
    g.fillStyle = "#6b7280";
    g.fillText(S.synced.has("nodes") ? "no nodes" : "loading…", 4, 20);
  }
  const gap = size >= 6 ? 1 : 0;
  for (const b of blocks) {
    let full = 0, used = 0, alloc = 0;
    for (const n of b.nodes) {
      const a = allocOf(n, resource);
      const u = usedOf(n.name, resource);
      if (a && u >= a) full++;
      used += u;
      alloc += a;
    }
    const pct = alloc ? `${Math.round((100 * used) / alloc)}% of ${resource} allocated` : `no ${resource}`;
    g.fillStyle = "#1d2330";
    g.fillText(`${b.zone} · ${b.nodes.length} node${b.nodes.length === 1 ? "" : "s"} · ${pct}` +
      (full ? ` · ${full} full` : ""), 2, b.y - LABEL / 2);
    b.nodes.forEach((n, i) => {
      const x = (i % perRow) * size, y = b.y + Math.floor(i / perRow) * size;
      const a = allocOf(n, resource);
      const u = usedOf(n.name, resource);
      g.fillStyle = n.ready !== "True" ? "#9ca3af" : a ? color(u / a) : u ? "#6a1b9a" : "#eef0f3";
      g.fillRect(x, y, size - gap, size - gap);
      if (size >= 8) {
        g.strokeStyle = "rgba(29,35,48,.25)";
        g.lineWidth = 1;
        g.strokeRect(x + 0.5, y + 0.5, size - gap - 1, size - gap - 1);
      }
      if (n.unsched || n.taints.length || n.pressure.length) {
        g.strokeStyle = n.pressure.length ? "#b91c1c" : "#1d2330";
        g.lineWidth = size >= 8 ? 2 : 1;
        g.beginPath();
        g.moveTo(x, y + size - gap);
        g.lineTo(x + size - gap, y);
        g.stroke();
      }
    });
  }
  layout = { blocks, size, perRow };
  drawLegend();
}

function swatch(fill, slash) {
  const c = document.createElement("canvas");
  c.width = c.height = 12;
  const g = c.getContext("2d");
  g.fillStyle = fill;
  g.fillRect(0, 0, 12, 12);
  if (slash) {
    g.strokeStyle = "#1d2330";
    g.lineWidth = 2;
    g.beginPath();
    g.moveTo(0, 12);
    g.lineTo(12, 0);
    g.stroke();
  }
  return c;
}

function legendItem(...parts) {
  const span = document.createElement("span");
  span.className = "item";
  span.append(...parts);
  return span;
}

function drawLegend() {
  const el = $("legend");
  if (el.childElementCount) return;
  const ramp = document.createElement("canvas");
  ramp.width = 120;
  ramp.height = 12;
  const g = ramp.getContext("2d");
  for (let x = 0; x < 120; x++) { g.fillStyle = color(x / 119); g.fillRect(x, 0, 1, 12); }
  el.append(
    legendItem("0%", ramp, "100%"),
    legendItem(swatch(color(2)), "over 100%"),
    legendItem(swatch("#9ca3af"), "not Ready"),
    legendItem(swatch(color(0.3), true), "tainted, cordoned or under pressure"),
  );
}

function nodeAt(x, y) {
  const { blocks, size, perRow } = layout;
  if (!blocks) return null;
  for (const b of blocks) {
    const row = Math.floor((y - b.y) / size);
    const col = Math.floor(x / size);
    if (y < b.y || col >= perRow) continue;
    const i = row * perRow + col;
    if (i < b.nodes.length) return b.nodes[i];
  }
  return null;
}

function hover(e) {
  const rect = $("heatmap").getBoundingClientRect();
  const n = nodeAt(e.clientX - rect.left, e.clientY - rect.top);
  const tip = $("tooltip");
  if (!n) { tip.hidden = true; return; }
  const lines = [`${n.name}  (${n.zone || "no zone"})`, `Ready=${n.ready}${n.unsched ? ", cordoned" : ""}`];
  for (const r of resources()) {
    const a = allocOf(n, r), u = usedOf(n.name, r);
    if (!a && !u) continue;
    lines.push(`${r}: ${fmt(r, u)} / ${fmt(r, a)}${a ? ` (${Math.round((100 * u) / a)}%)` : ""}`);
  }
  if (n.pressure.length) lines.push("pressure: " + n.pressure.join(", "));
  if (n.taints.length) lines.push("taints: " + n.taints.join(", "));
  lines.push("(click: its pods)");
  tip.textContent = lines.join("\n");
  tip.hidden = false;
  const box = $("nodes-panel").getBoundingClientRect();
  tip.style.left = `${Math.min(e.clientX - box.left + 14, box.width - 300)}px`;
  tip.style.top = `${e.clientY - box.top + 14}px`;
}

// ------------------------------------------------------------------ the trace

function select(key) {
  S.selected = key;
  for (const tr of document.querySelectorAll("tr.pod")) {
    tr.classList.toggle("selected", tr.dataset.pod === key);
  }
  loadTrace(key, true);
}

let traceSeq = 0;
async function loadTrace(key, fresh) {
  const seq = ++traceSeq;
  const [ns, name] = key.split("/");
  $("trace-pod").textContent = key;
  if (fresh) $("trace").replaceChildren(text("p", "loading…", "muted"));
  const resp = await fetch(`api/trace?namespace=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`);
  const doc = await resp.json();
  if (seq !== traceSeq) return;
  if (!resp.ok) {
    $("trace").replaceChildren(text("p", `${resp.status}: ${doc.message}`, "muted"));
    return;
  }
  renderTrace(key, doc.attempts);
}

function text(tag, t, cls) {
  const el = document.createElement(tag);
  el.textContent = t;
  if (cls) el.className = cls;
  return el;
}

function table(head, data) {
  const t = document.createElement("table");
  const tr = document.createElement("tr");
  for (const h of head) tr.append(text("th", h));
  t.createTHead().append(tr);
  const body = t.createTBody();
  for (const r of data) {
    const row = document.createElement("tr");
    for (const v of r) row.append(cell(`${v}`));
    body.append(row);
  }
  return t;
}

function renderTrace(key, attempts) {
  const box = $("trace");
  const p = S.pods.get(key);
  const out = [];
  if (p) out.push(text("p", `phase ${p.phase}${p.node ? ", on " + p.node : ", not bound"}`, "muted"));
  if (!attempts.length) {
    out.push(text("p", "No scheduling attempts recorded (not tried yet, bound by nodeName, or the scheduler restarted)."));
  }
  attempts.slice().reverse().forEach((a, i) => {
    const div = document.createElement("div");
    div.className = "attempt " + a.result;
    const when = a.time ? new Date(a.time * 1000).toLocaleTimeString() : "";
    const ms = (a.duration_seconds * 1000).toFixed(1);
    div.append(text("div", `#${attempts.length - i} ${a.result}${a.node ? " → " + a.node : ""}` +
      `  ${when}  (${ms} ms, profile ${a.profile}, cycle ${a.cycle})`, "head"));
    if (a.message) div.append(text("div", a.message));
    if (a.result !== "gated") {
      div.append(text("div", `nodes: ${a.nodes_total} in cluster, ${a.nodes_evaluated} evaluated, ` +
        `${a.nodes_feasible} feasible`, "muted"));
    }
    if (a.rejections.length) {
      div.append(text("h3", "Filter verdicts: rejected by"));
      div.append(table(["plugin", "nodes", "reason", "e.g."],
        a.rejections.map((r) => [r.plugin, r.count, r.reason, r.nodes.slice(0, 3).join(", ")])));
    }
    if (a.top_scores.length) {
      div.append(text("h3", "Top scores"));
      div.append(table(["node", "total", "by plugin"], a.top_scores.map((s) => [s.node, s.total,
        Object.entries(s.by_plugin).sort().map(([k, v]) => `${k} ${v}`).join(", ")])));
    }
    if (a.preemption) div.append(...preemption(a.preemption));
    out.push(div);
  });
  box.replaceChildren(...out);
}

function preemption(pr) {
  if (!pr.eligible) return [text("h3", "Preemption"), text("div", pr.reason || "not eligible")];
  const out = [text("h3", `Preemption: ${pr.potential_nodes} node(s) where it might help, ` +
    `${pr.dry_runs} dry run(s), ${pr.candidates.length} candidate(s)`)];
  if (pr.candidates.length) {
    out.push(table(["candidate", "victims", "PDB violations"], pr.candidates.slice(0, 10).map((c) =>
      [c.node + (c.node === pr.node ? "  ← chosen" : ""), c.victims.join(", "), c.pdb_violations])));
  }
  if (pr.node) {
    out.push(text("div", `nominated ${pr.node}; preempting ${pr.victims.join(", ")}`, "chosen"));
    if (pr.why) out.push(text("div", `chosen by: ${pr.why}`));
  } else if (pr.reason) {
    out.push(text("div", `no candidate: ${pr.reason}`));
  }
  return out;
}

// ------------------------------------------------------------------ the chart

function tick() {
  let pending = 0;
  for (const p of S.pods.values()) if (p.phase === "Pending" && !p.node) pending++;
  const lats = S.lats.sort((a, b) => a - b);
  const lat = lats.length ? lats[Math.floor(lats.length / 2)] : null;
  S.series.push({ t: Date.now() / 1000, binds: S.binds, pending, lat });
  if (S.series.length > HISTORY) S.series.shift();
  $("bind-rate").textContent = S.binds;
  S.binds = 0;
  S.lats = [];
  drawChart();
}

// Creation and PodScheduled times are whole seconds: 0 means under a second.
function secondsText(s) {
  return s < 1 ? "under 1 s" : `${s} s`;
}

function drawChart() {
  const c = $("chart");
  const w = c.parentElement.clientWidth - 24 || 480, h = 180;
  const dpr = window.devicePixelRatio || 1;
  c.width = w * dpr;
  c.height = h * dpr;
  c.style.width = w + "px";
  c.style.height = h + "px";
  const g = c.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const pad = { l: 44, r: 44, t: 10, b: 20 };
  const data = S.series;
  const maxB = Math.max(1, ...data.map((d) => d.binds));
  const maxP = Math.max(1, ...data.map((d) => d.pending));
  const x = (i) => pad.l + ((w - pad.l - pad.r) * (i + HISTORY - data.length)) / (HISTORY - 1);
  g.strokeStyle = "#e3e6ec";
  g.strokeRect(pad.l, pad.t, w - pad.l - pad.r, h - pad.t - pad.b);
  g.font = "11px system-ui, sans-serif";
  const line = (key, max, colour) => {
    g.strokeStyle = colour;
    g.lineWidth = 1.5;
    g.beginPath();
    data.forEach((d, i) => {
      const y = h - pad.b - ((h - pad.t - pad.b) * d[key]) / max;
      if (i) g.lineTo(x(i), y); else g.moveTo(x(i), y);
    });
    g.stroke();
  };
  line("binds", maxB, "#2456c7");
  line("pending", maxP, "#b45309");
  g.fillStyle = "#2456c7";
  g.textAlign = "right";
  g.fillText(`${maxB}/s`, pad.l - 4, pad.t + 6);
  g.fillText("0", pad.l - 4, h - pad.b);
  g.fillStyle = "#b45309";
  g.textAlign = "left";
  g.fillText(`${maxP}`, w - pad.r + 4, pad.t + 6);
  g.fillText("0", w - pad.r + 4, h - pad.b);
  g.fillStyle = "#6b7280";
  g.fillText(`last ${HISTORY / 60} min`, pad.l, h - 5);
  const lats = data.filter((d) => d.lat !== null).slice(-30).map((d) => d.lat);
  $("chart-note").textContent = "blue: binds per second (left axis); orange: pending pods, the queue " +
    "(right axis)" + (lats.length ? "; median creation→scheduled of recent binds " +
    secondsText(lats.sort((a, b) => a - b)[Math.floor(lats.length / 2)]) : "");
}

// The schedulers' own figures (their Health, every 2 s): pods per queue of each replica.
function drawSchedulers(list) {
  const QUEUES = ["active", "backoff", "unschedulable", "gated"];
  rows($("schedulers").tBodies[0], list.sort((a, b) => b.leading - a.leading), (s) => {
    const tr = document.createElement("tr");
    tr.dataset.identity = s.identity;
    const queues = Object.keys(s.pending).sort((a, b) => {
      const ia = QUEUES.indexOf(a), ib = QUEUES.indexOf(b);
      return (ia < 0 ? 9 : ia) - (ib < 0 ? 9 : ib) || (a < b ? -1 : 1);
    }).map((q) => `${q} ${s.pending[q]}`).join(", ");
    tr.append(cell(s.identity),
      cell(s.leading ? (s.mode === "shared-state" ? "active" : "leader") : "standby", "nowrap"),
      cell(`${s.scheduled}`, "num"), cell(queues || "—"));
    return tr;
  });
}

// ------------------------------------------------------------------ start

window.addEventListener("DOMContentLoaded", () => {
  $("resource").addEventListener("change", () => { dirty.add("nodes"); schedule(); });
  $("pod-filter").addEventListener("input", () => {
    dirty.add("pods");
    dirty.add("filter");
    schedule();
  });
  $("heatmap").addEventListener("mousemove", hover);
  $("heatmap").addEventListener("mouseleave", () => { $("tooltip").hidden = true; });
  $("heatmap").addEventListener("click", (e) => {
    const rect = $("heatmap").getBoundingClientRect();
    const n = nodeAt(e.clientX - rect.left, e.clientY - rect.top);
    if (!n) return;
    $("pod-filter").value = n.name; // the node's pods in the pods table
    dirty.add("pods");
    dirty.add("filter");
    schedule();
  });
  window.addEventListener("resize", () => { dirty.add("all"); schedule(); });
  setInterval(tick, 1000);
  connect();
  schedule();
});
