// The dashboard's one script: refreshes the account page's table, and the
// queue page's figures and charts, without a reload. No dependency, no
// network but this server (the page's Content-Security-Policy says so).
"use strict";

(function () {
  const page = document.body.dataset.page;

  async function fetchText(url) {
    const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (!response.ok) throw new Error(url + ": HTTP " + response.status);
    return response.text();
  }

  // The account page: the table again every 2 s, as the server renders it.
  if (page === "account") {
    const holder = document.getElementById("queues");
    const url = holder && holder.dataset.refresh;
    if (url) {
      setInterval(async () => {
        try {
          holder.innerHTML = await fetchText(url);
        } catch (e) {
          /* a missed refresh is retried at the next tick */
        }
      }, 2000);
    }
  }

  // The queue page: figures and charts every second.
  if (page === "queue") {
    const figures = document.getElementById("figures");
    const url = figures && figures.dataset.series;
    const NS = "http://www.w3.org/2000/svg";

    function line(svg, values, max, cls) {
      if (values.length < 2) return;
      const step = 300 / (values.length - 1);
      const points = values
        .map((v, i) => (i * step).toFixed(1) + "," + (98 - (max > 0 ? (v / max) * 96 : 0)).toFixed(1))
        .join(" ");
      const polyline = document.createElementNS(NS, "polyline");
      polyline.setAttribute("points", points);
      polyline.setAttribute("class", "line " + cls);
      svg.appendChild(polyline);
    }

    function chart(id, series, label) {
      const svg = document.getElementById(id);
      if (!svg) return;
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      const max = Math.max(0, ...series.flatMap((s) => s.values));
      for (const s of series) line(svg, s.values, max, s.cls);
      svg.setAttribute("aria-label", label + "; highest " + max.toFixed(max < 10 ? 1 : 0));
    }

    async function refresh() {
      let data;
      try {
        data = JSON.parse(await fetchText(url));
      } catch (e) {
        return;
      }
      for (const key of ["available", "delayed", "leased"]) {
        document.getElementById(key).textContent = String(data[key]);
      }
      document.getElementById("bytes").textContent = data.backlog_bytes;
      document.getElementById("oldest").textContent = data.oldest;
      const p = data.points;
      chart("chart-count", [{ values: p.map((x) => x.backlog_count), cls: "count" }], "Backlog in messages");
      chart("chart-bytes", [{ values: p.map((x) => x.backlog_bytes), cls: "bytes" }], "Backlog in bytes");
      chart(
        "chart-rates",
        [
          { values: p.map((x) => x.pushed), cls: "pushed" },
          { values: p.map((x) => x.pulled), cls: "pulled" },
          { values: p.map((x) => x.acked), cls: "acked" },
          { values: p.map((x) => x.retried), cls: "retried" },
          { values: p.map((x) => x.dead_lettered), cls: "dead" },
        ],
        "Messages a second",
      );
      figures.dataset.points = String(p.length);
    }

    if (url) {
      refresh();
      setInterval(refresh, 1000);
    }
  }
})();
