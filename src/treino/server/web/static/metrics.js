// treino job page: every metric key the job logged, one uPlot chart per key, with a log scale, EMA smoothing and
// other jobs overlaid. The selection lives in the URL (?key=loss&key=lr&log=1&smooth=0.6&compare=12&compare=15), so
// a link shows the same charts. Each job's data comes from /jobs/ID/metrics.json, which checks the visitor as the
// job's own page does: a job the visitor may not see is refused, and nothing of it is drawn.
"use strict";
(function () {
  const root = document.getElementById("metrics");
  if (!root || !window.uPlot) return;
  const jobId = +root.dataset.id;
  const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000"]; // Okabe-Ito
  const T = root.dataset;
  const $ = (id) => document.getElementById(id);
  const clamp = (x, lo, hi) => Math.min(Math.max(x, lo), hi);
  const fmt = new Intl.NumberFormat(document.documentElement.lang || "en", { maximumSignificantDigits: 4 });

  const params = new URLSearchParams(location.search);
  const state = {
    keys: params.getAll("key").filter((k) => k !== ""),
    log: params.get("log") === "1",
    smooth: clamp(+params.get("smooth") || 0, 0, 0.99),
    compare: [...new Set(params.getAll("compare").map(Number))].filter((n) => Number.isInteger(n) && n > 0 && n !== jobId),
  };
  let known = JSON.parse($("metric-keys-data").textContent).map((k) => k.key); // every key of every job shown
  if (!params.has("key")) state.keys = known.slice(0, +T.defaultKeys);
  known = [...new Set([...known, ...state.keys])].sort(); // a link's key this job lacks: still a box to untick
  const data = new Map(); // job id -> its last metrics.json
  let charts = [];

  function writeUrl() {
    const q = new URLSearchParams();
    state.keys.forEach((k) => q.append("key", k));
    if (!state.keys.length) q.append("key", ""); // none picked, not the default
    if (state.log) q.set("log", "1");
    if (state.smooth > 0) q.set("smooth", String(state.smooth));
    state.compare.forEach((id) => q.append("compare", String(id)));
    history.replaceState(null, "", location.pathname + "?" + q.toString());
  }

  async function fetchJob(id) {
    const q = new URLSearchParams();
    state.keys.forEach((k) => q.append("key", k));
    const r = await fetch(`/jobs/${id}/metrics.json?${q}`, { credentials: "same-origin" });
    if (!r.ok || r.redirected) throw Object.assign(new Error(`job ${id}: ${r.status}`), { status: r.status });
    data.set(id, await r.json());
  }

  // TensorBoard's smoothing: an exponential moving average, debiased so the first points are not pulled to 0.
  function ema(ys, weight) {
    let last = 0, n = 0;
    return ys.map((v) => {
      if (v == null) return null;
      last = last * weight + (1 - weight) * v; n += 1;
      return last / (1 - Math.pow(weight, n));
    });
  }

  function renderPick() {
    const pick = $("metric-pick");
    pick.textContent = "";
    for (const key of known) {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox"; box.value = key; box.checked = state.keys.includes(key);
      box.addEventListener("change", () => {
        state.keys = known.filter((k) => k === key ? box.checked : state.keys.includes(k));
        writeUrl(); reload();
      });
      label.append(box, " " + key);
      pick.append(label);
    }
  }

  function renderCompared() {
    const list = $("compare-list");
    list.textContent = "";
    state.compare.forEach((id) => {
      const chip = document.createElement("span");
      chip.className = "chip"; chip.dataset.job = String(id);
      const d = data.get(id);
      chip.append(`#${id} ${d ? d.job.name : ""} `);
      const x = document.createElement("button");
      x.type = "button"; x.textContent = "×"; x.title = T.tRemove; x.setAttribute("aria-label", `${T.tRemove} #${id}`);
      x.addEventListener("click", () => { state.compare = state.compare.filter((c) => c !== id); data.delete(id); writeUrl(); renderCompared(); draw(); });
      chip.append(x);
      list.append(chip);
    });
  }

  function draw() {
    charts.forEach((c) => c.destroy());
    charts = [];
    const box = $("metric-charts");
    box.textContent = "";
    const jobs = [jobId, ...state.compare].filter((id) => data.has(id));
    const width = Math.max((box.clientWidth || 900) / (state.keys.length > 1 ? 2 : 1) - 40, 300);
    for (const key of state.keys) {
      const tables = [], series = [{ label: root.dataset.tStep || "step" }];
      jobs.forEach((id, n) => {
        const s = data.get(id).series.find((x) => x.key === key);
        if (!s) return;
        const colour = PALETTE[n % PALETTE.length], label = `#${id} ${data.get(id).job.name}`;
        const ys = state.log ? s.value.map((v) => (v != null && v > 0 ? v : null)) : s.value; // log: only v > 0
        const line = { stroke: colour, width: 1.5, spanGaps: true, points: { show: s.step.length < 60 } };
        if (state.smooth > 0) {
          tables.push([s.step, ys]);
          series.push({ label: `${label} (${T.tRaw})`, stroke: colour + "40", width: 1, spanGaps: true, points: { show: false } });
          tables.push([s.step, ema(ys, state.smooth)]);
        } else {
          tables.push([s.step, ys]);
        }
        series.push({ label, ...line });
      });
      const fig = document.createElement("figure");
      fig.dataset.key = key;
      const cap = document.createElement("figcaption");
      cap.textContent = key;
      const el = document.createElement("div");
      el.className = "chart";
      fig.append(cap, el);
      box.append(fig);
      if (!tables.length) { el.textContent = T.tNone; continue; }
      fig.uplot = new uPlot({
        width: width, height: 220,
        legend: { show: true },
        scales: { x: { time: false }, y: state.log ? { distr: 3 } : {} },
        axes: [{ label: root.dataset.tStep || "step" }, { values: (u, v) => v.map((x) => (x == null ? "" : fmt.format(x))), size: 60 }],
        series: series,
      }, tables.length === 1 ? tables[0] : uPlot.join(tables), el);
      charts.push(fig.uplot);
    }
    root.dataset.drawn = String(charts.length); // how many charts the last draw made (each figure's .uplot is its chart)
  }

  function learnKeys() {
    const all = new Set(known);
    data.forEach((d) => d.keys.forEach((k) => all.add(k.key)));
    const sorted = [...all].sort();
    if (sorted.join("\n") !== known.join("\n")) { known = sorted; renderPick(); }
  }

  function refused(id, err) {
    const why = err.status === 404 ? T.tNotFound : err.status === 403 ? T.tForbidden : T.tFailed;
    $("compare-error").textContent = `#${id}: ${why}`;
  }

  async function reload() {
    const ids = [jobId, ...state.compare];
    const results = await Promise.allSettled(ids.map(fetchJob));
    results.forEach((r, i) => {
      if (r.status === "rejected" && ids[i] !== jobId) {
        state.compare = state.compare.filter((c) => c !== ids[i]);
        refused(ids[i], r.reason);
      }
    });
    writeUrl(); learnKeys(); renderCompared(); draw();
  }

  $("metric-log").checked = state.log;
  $("metric-smooth").value = String(state.smooth);
  $("metric-smooth-value").textContent = String(state.smooth);
  $("metric-log").addEventListener("change", (e) => { state.log = e.target.checked; writeUrl(); draw(); });
  $("metric-smooth").addEventListener("input", (e) => {
    state.smooth = clamp(+e.target.value, 0, 0.99);
    $("metric-smooth-value").textContent = String(state.smooth);
    writeUrl(); draw();
  });
  $("compare-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const id = +$("compare-id").value;
    $("compare-error").textContent = "";
    if (!Number.isInteger(id) || id < 1 || id === jobId || state.compare.includes(id)) return;
    try {
      await fetchJob(id);
    } catch (err) {
      refused(id, err);
      return;
    }
    state.compare.push(id);
    $("compare-id").value = "";
    writeUrl(); learnKeys(); renderCompared(); draw();
  });
  $("metric-controls").hidden = false;
  renderPick();
  reload();

  // While a job shown is not final, its series grow: fetch them again every POLL_MS, or, for a run so long that
  // reading it takes a while, after IDLE_FACTOR times that long (one viewer keeps the server busy 1/(1+4) at most).
  const IDLE_FACTOR = 4;
  let busy = false, nextAt = 0;
  setInterval(async () => {
    const live = [jobId, ...state.compare].filter((id) => data.has(id) && !data.get(id).job.final);
    if (busy || document.hidden || !live.length || Date.now() < nextAt) return;
    busy = true;
    const started = Date.now();
    try { await Promise.all(live.map(fetchJob)); learnKeys(); renderCompared(); draw(); } catch (e) { console.warn(e); }
    nextAt = Date.now() + IDLE_FACTOR * (Date.now() - started);
    busy = false;
  }, +T.poll);
})();
