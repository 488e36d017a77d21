// treino dashboard: the pages work without this script; with it, the overview and a running job refresh every
// POLL_MS, and the job and plan charts are drawn with uPlot (vendored in /static/vendor, MIT).
"use strict";
(function () {
  const lang = document.documentElement.lang || "en";
  const fmt = (digits) => new Intl.NumberFormat(lang, { maximumFractionDigits: digits });

  function every(ms, fn) { let busy = false; setInterval(async () => { if (busy || document.hidden) return; busy = true; try { await fn(); } catch (e) { console.warn(e); } busy = false; }, ms); }

  // Overview: re-render the body from the server every POLL_MS (one rendering path, the server's).
  const overview = document.getElementById("overview");
  if (overview) {
    every(+overview.dataset.poll, async () => {
      const r = await fetch("/?fragment=1", { headers: { Accept: "text/html" }, credentials: "same-origin" });
      if (r.redirected || !r.ok) return;
      overview.innerHTML = await r.text();
    });
  }

  function chart(el, xs, ys, label, colour, xLabel, yFmt) {
    if (!window.uPlot || !el) return null;
    el.innerHTML = "";
    const width = Math.max(el.clientWidth - 10, 300);
    return new uPlot({
      width: width, height: 200,
      legend: { show: true },
      scales: { x: { time: false } },
      axes: [{ label: xLabel }, { values: (u, v) => v.map((x) => yFmt.format(x)), size: 60 }],
      series: [{ label: xLabel }, { label: label, stroke: colour, width: 1.5, points: { show: xs.length < 60 }, spanGaps: true }],
    }, [xs, ys], el);
  }

  // Job page: loss and steps/s against step; poll while the job is not final.
  const job = document.getElementById("job");
  if (job) {
    const data = JSON.parse(document.getElementById("curves").textContent);
    const lossEl = document.getElementById("loss-chart"), rateEl = document.getElementById("rate-chart");
    const states = JSON.parse(job.dataset.states || "{}"), stepLabel = job.dataset.tStep || "step";  // in the page's language
    let plots = [];
    const draw = (c) => {
      if (!c.step.length) return;
      plots.forEach((p) => p.destroy());
      plots = [chart(lossEl, c.step, c.loss, lossEl.dataset.label, "#0072B2", stepLabel, fmt(4)),
               chart(rateEl, c.step, c.rate, rateEl.dataset.label, "#E69F00", stepLabel, fmt(2))].filter(Boolean);
    };
    draw(data);
    if (job.dataset.final !== "1") {
      every(+job.dataset.poll, async () => {
        const r = await fetch(`/jobs/${job.dataset.id}/live.json`, { credentials: "same-origin" });
        if (!r.ok) return;
        const live = await r.json();
        const log = document.getElementById("log");  // absent when the visitor may not read the logs
        if (log && live.log != null) {
          const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
          log.textContent = live.log; if (atEnd) log.scrollTop = log.scrollHeight;
        }
        if (job.dataset.state === "queued" && live.state !== "queued") location.reload();  // why it waited, how long: drawn by the server
        document.getElementById("job-state").textContent = states[live.state] || live.state;
        document.getElementById("job-state").className = "st st-" + live.state;
        document.getElementById("job-step").textContent = (live.last_step == null ? "–" : fmt(0).format(live.last_step)) + (live.steps ? " / " + fmt(0).format(live.steps) : "");
        document.getElementById("job-rate").textContent = live.steps_per_s == null ? "–" : fmt(2).format(live.steps_per_s);
        document.getElementById("job-eta").textContent = live.eta_s == null ? "–" : fmt(0).format(live.eta_s) + " s";
        draw(live.curves);
        if (live.final) location.reload();
      });
    }
  }

  // Forms that ask first (cancel; a cancelled job's resubmit): the browser's own confirmation dialog; no script, no question.
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (e) => { if (!window.confirm(form.dataset.confirm)) e.preventDefault(); });
  });

  // Plan page: scaling efficiency, NVLink against PCIe.
  const scaleEl = document.getElementById("scale-chart");
  if (scaleEl) {
    const s = JSON.parse(document.getElementById("scale-data").textContent);
    if (s.gpus.length && window.uPlot) {
      scaleEl.innerHTML = "";
      new uPlot({
        width: Math.max(scaleEl.clientWidth - 10, 300), height: 220,
        scales: { x: { time: false, distr: 3 }, y: { range: [0, 1.05] } },
        axes: [{ label: "GPUs" }, { values: (u, v) => v.map((x) => Math.round(x * 100) + " %"), size: 55 }],
        series: [{ label: "GPUs" },
                 { label: "NVLink", stroke: "#0072B2", width: 2, points: { show: true }, spanGaps: true },
                 { label: "PCIe", stroke: "#D55E00", width: 2, points: { show: true }, spanGaps: true }],
      }, [s.gpus, s.nvlink, s.pcie], scaleEl);
    }
  }
})();
