/* EviScene viewer: draws the Vega-Lite specs a page embeds, refreshes the live runs table,
   and (in a report file) routes between the dashboard, the episode list and episode pages.
   Text from the log only ever reaches the page as textContent or as HTML the server escaped. */
(function () {
  "use strict";

  function drawCharts(root) {
    root.querySelectorAll(".chart[data-spec]:not([data-drawn])").forEach(function (el) {
      el.setAttribute("data-drawn", "1");
      var spec = JSON.parse(document.getElementById(el.getAttribute("data-spec")).textContent);
      vegaEmbed(el, spec, { actions: false, renderer: "svg" }).catch(function (err) { console.error("chart", err); });
    });
  }

  function liveRuns() {
    var box = document.getElementById("runs-live");
    if (!box) return;
    var last = box.innerHTML;
    setInterval(function () {
      fetch(box.getAttribute("data-refresh"), { cache: "no-store" }).then(function (r) {
        return r.ok ? r.text() : null;
      }).then(function (html) {
        if (html === null || html === last) return;
        var picked = {};
        box.querySelectorAll("input[type=radio]:checked").forEach(function (i) { picked[i.name] = i.value; });
        box.innerHTML = html;
        last = html;
        box.querySelectorAll("input[type=radio]").forEach(function (i) { if (picked[i.name] === i.value) i.checked = true; });
      }).catch(function () { /* the server went away: keep the last table */ });
    }, 2000);
  }

  /* ---- the one-file report ---- */

  function reportData(id) { return JSON.parse(document.getElementById(id).textContent); }

  function gunzipJson(base64) {
    var bytes = Uint8Array.from(atob(base64), function (c) { return c.charCodeAt(0); });
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  function Report() {
    var meta = reportData("report-meta");
    var rows = reportData("report-episodes");
    var images = reportData("report-images");
    var chunks = {};
    var state = { sort: "episode_id", desc: false, page: 1, q: "" };
    var pageSize = 50;

    function show(route) {
      document.querySelectorAll("[data-route]").forEach(function (s) { s.hidden = s.getAttribute("data-route") !== route; });
      document.querySelectorAll("header.top nav a").forEach(function (a) { a.classList.toggle("active", a.getAttribute("href") === "#" + route); });
    }

    function withImages(html) {
      return html.replace(/src="img:([0-9a-f]{64})"/g, function (_, sha) { return 'src="' + (images[sha] || "") + '"'; });
    }

    function episode(id) {
      var where = Object.prototype.hasOwnProperty.call(meta.chunk_of, id) ? meta.chunk_of[id] : undefined;  // not `constructor`'s
      var box = document.getElementById("episode-page");
      if (where === undefined) { box.textContent = "No episode " + id + " in this report."; show("episode"); return; }
      var load = chunks[where] || (chunks[where] = gunzipJson(document.getElementById("episode-chunk-" + where).textContent));
      load.then(function (pages) { box.innerHTML = withImages(pages[id]); show("episode"); window.scrollTo(0, 0); });
    }

    function cell(tr, value, href) {
      var td = document.createElement("td");
      if (href) { var a = document.createElement("a"); a.href = href; a.textContent = value; td.appendChild(a); }
      else { td.textContent = value === null || value === undefined ? "–" : typeof value === "number" && !Number.isInteger(value) ? value.toFixed(3) : String(value); }
      if (typeof value === "number") td.className = "num";
      tr.appendChild(td);
    }

    function renderList() {
      var q = state.q.toLowerCase();
      var shown = rows.filter(function (r) {
        return !q || meta.columns.some(function (c) { return r[c] !== null && String(r[c]).toLowerCase().indexOf(q) >= 0; });
      });
      shown.sort(function (a, b) {
        var x = a[state.sort], y = b[state.sort];
        if (x === y) return a.episode_id < b.episode_id ? -1 : 1;
        if (x === null) return 1; if (y === null) return -1;
        return (x < y ? -1 : 1) * (state.desc ? -1 : 1);
      });
      var pages = Math.max(1, Math.ceil(shown.length / pageSize));
      state.page = Math.min(state.page, pages);
      var head = document.getElementById("report-list-head"), body = document.getElementById("report-list-body");
      head.textContent = ""; body.textContent = "";
      var tr = document.createElement("tr");
      meta.columns.forEach(function (c) {
        var th = document.createElement("th"), a = document.createElement("a");
        a.href = "#episodes"; a.textContent = c.replace(/_/g, " ") + (c === state.sort ? (state.desc ? " ▼" : " ▲") : "");
        a.addEventListener("click", function (ev) { ev.preventDefault(); state.desc = c === state.sort ? !state.desc : false; state.sort = c; renderList(); });
        th.appendChild(a); tr.appendChild(th);
      });
      head.appendChild(tr);
      shown.slice((state.page - 1) * pageSize, state.page * pageSize).forEach(function (r) {
        var row = document.createElement("tr");
        meta.columns.forEach(function (c) { cell(row, r[c], c === "episode_id" ? "#episode/" + encodeURIComponent(r.episode_id) : null); });
        body.appendChild(row);
      });
      document.getElementById("report-list-count").textContent = shown.length + " episodes · page " + state.page + " of " + pages;
    }

    document.getElementById("report-search").addEventListener("input", function (ev) { state.q = ev.target.value; state.page = 1; renderList(); });
    document.getElementById("report-prev").addEventListener("click", function () { state.page = Math.max(1, state.page - 1); renderList(); });
    document.getElementById("report-next").addEventListener("click", function () { state.page += 1; renderList(); });

    function route() {
      var hash = decodeURIComponent(location.hash.slice(1)) || "dashboard";
      if (hash.indexOf("episode/") === 0) return episode(hash.slice(8));
      if (hash === "episodes") renderList();
      var name = document.querySelector('[data-route="' + CSS.escape(hash) + '"]') ? hash : "dashboard";
      show(name);
      drawCharts(document.querySelector('[data-route="' + name + '"]'));
    }
    window.addEventListener("hashchange", route);
    route();
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (document.getElementById("report-meta")) Report();
    else drawCharts(document);
    liveRuns();
  });
})();
