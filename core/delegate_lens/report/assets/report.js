/* delegate-lens report page: draws the data computed in Python (no layout of its own:
   the graph is laid out by Cytoscape.js with the dagre layout). */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var rows = data.rows;
  var unit = data.meta.unit;
  var report = { data: data, cy: null, graphState: null, timeline: { drawn: 0 }, views: {} };
  window.dlReport = report;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") node.textContent = attrs[k];
        else if (k === "cls") node.className = attrs[k];
        else node.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "";
    if (typeof v !== "number") return String(v);
    if (v === 0) return "0";
    // counts (samples, rows, flops) and whole times: as integers, grouped by thousands
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString("en-US");
    var a = Math.abs(v);
    if (a >= 1000 || a < 0.001) return v.toExponential(3);
    return v.toPrecision(4).replace(/\.?0+$/, "");
  }
  function pct(v) { return v === null || v === undefined ? "" : (100 * v).toFixed(1) + "%"; }
  function blockLabel(b) {
    var blk = data.blocks[b];
    return blk.index + ": " + blk.name + (blk.method ? " (" + blk.method + ")" : "") + " ×" + blk.runs;
  }

  /* ------------------------------------------------------------------ header, tabs */
  document.getElementById("title").textContent = data.meta.title;
  document.getElementById("meta").textContent =
    "ETDump " + (data.meta.etdump || "(bytes)") + " · " + data.meta.runs + " runs · " +
    data.meta.events + " events · times in " + unit +
    (data.meta.etrecord ? " · ETRecord " + data.meta.etrecord : " · no ETRecord (graph and links need --etrecord)");
  var shown = {};
  function show(view) {
    document.querySelectorAll(".view").forEach(function (s) { s.classList.toggle("active", s.id === "view-" + view); });
    document.querySelectorAll(".tab").forEach(function (t) { t.classList.toggle("active", t.dataset.view === view); });
    if (!shown[view]) { shown[view] = true; report.views[view](); }
    else if (view === "graph" && report.cy) { report.cy.resize(); }
    else if (view === "timeline") { drawTimeline(); }
    report.current = view;
  }
  report.show = show;
  document.querySelectorAll(".tab").forEach(function (t) {
    t.addEventListener("click", function () { show(t.dataset.view); });
  });

  /* ------------------------------------------------------------------ row details */
  function rowTable(ids) {
    var table = el("table", { cls: "data rows-of-node" });
    table.appendChild(el("tr", null, ["block", "row", "p50 (" + unit + ")", "backend", "id"].map(function (h) { return el("th", { text: h }); })));
    ids.forEach(function (r) {
      var tr = el("tr", { cls: rows.delegated[r] ? "delegated" : "" }, [
        el("td", { text: data.blocks[rows.block[r]].name }),
        el("td", { text: rows.name[r] }),
        el("td", { cls: "num", text: fmt(rows.p50[r]) }),
        el("td", { text: rows.backend[r] || "" }),
        el("td", { text: rows.identifier[r] === null ? "" : String(rows.identifier[r]) })
      ]);
      table.appendChild(tr);
      var meta = data.metadata[String(r)];
      if (meta !== undefined) {
        table.appendChild(el("tr", null, [el("td", { colspan: "5" }, [el("pre", { text: "metadata: " + JSON.stringify(meta, null, 1) })])]));
      }
    });
    return table;
  }

  /* ------------------------------------------------------------------ graph */
  var AUTO_COLLAPSE = 80;  // a graph with more nodes opens collapsed to a module depth
  var COLOR_STOPS = [[255, 245, 235], [253, 141, 60], [166, 54, 3]];
  function colour(t) {
    t = Math.max(0, Math.min(1, t));
    var i = t < 0.5 ? 0 : 1, u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
    var a = COLOR_STOPS[i], b = COLOR_STOPS[i + 1];
    return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * u); }).join(",") + ")";
  }
  function modulePath(node, depth) {
    var mods = node.module;
    if (depth < 1 || mods.length < depth) return null;
    return mods[depth - 1][0];
  }

  report.views.graph = function () {
    var graphs = data.graphs;
    var empty = document.getElementById("graph-empty");
    if (!graphs.length) {
      document.querySelector("#view-graph .graph-area").hidden = true;
      document.querySelector("#view-graph .controls").hidden = true;
      empty.hidden = false;
      empty.textContent = "No ETRecord was given, so there is no graph. Run `delegate-lens report ETDUMP --etrecord R -o report.html` to see which operators went to which delegate.";
      return;
    }
    if (typeof cytoscape !== "undefined" && typeof cytoscapeDagre !== "undefined") cytoscape.use(cytoscapeDagre);
    var methodSel = document.getElementById("graph-method");
    var measureSel = document.getElementById("graph-measure");
    var depthSel = document.getElementById("graph-depth");
    graphs.forEach(function (g, i) { methodSel.appendChild(el("option", { value: String(i), text: g.method })); });
    var state = { graph: 0, measure: null, depth: null, expanded: {}, autoFit: true };
    report.graphState = state;
    // The graph fills its box, its cluster titles inside: fitted when drawn and again each
    // time the box changes size (a notebook output laid out, shown or widened after the
    // page started, when the first fit found a box of no size), until the user pans or
    // zooms; "fit" fits it again and turns this back on.
    var FIT_PADDING = 24, fitting = false;
    function fitGraph() {
      var cy = report.cy, box = document.getElementById("cy");
      if (!cy || !box.clientWidth || !box.clientHeight) return;  // fitted once it has a size
      cy.resize();
      fitting = true;
      cy.fit(undefined, FIT_PADDING);
      fitting = false;
    }
    if (typeof ResizeObserver !== "undefined") {
      new ResizeObserver(function () {
        if (state.autoFit) fitGraph();
        else if (report.cy) report.cy.resize();
      }).observe(document.getElementById("cy"));
    }

    function setupGraph() {
      var g = graphs[state.graph];
      measureSel.innerHTML = "";
      Object.keys(g.measures).forEach(function (m) { measureSel.appendChild(el("option", { value: m, text: m === "p50" ? "p50 time" : m === "share" ? "share of run" : m })); });
      state.measure = Object.keys(g.measures)[0];
      var maxDepth = 0;
      g.nodes.forEach(function (n) { maxDepth = Math.max(maxDepth, n.module.length); });
      depthSel.innerHTML = "";
      depthSel.appendChild(el("option", { value: "-1", text: "all (no collapsing)" }));
      for (var d = 1; d <= maxDepth; d++) depthSel.appendChild(el("option", { value: String(d), text: String(d) }));
      // collapse a big graph so that it stays readable
      state.expanded = {};
      var depth = -1;
      if (g.nodes.length > AUTO_COLLAPSE && maxDepth > 0) {
        depth = 1;
        for (var k = maxDepth; k >= 1; k--) { if (visibleCount(g, k) <= AUTO_COLLAPSE) { depth = k; break; } }
      }
      state.depth = depth;
      state.expanded = {};
      depthSel.value = String(depth);
      render();
    }
    function visibleCount(g, depth) {
      var seen = {};
      g.nodes.forEach(function (n, i) { seen[visibleId(n, i, depth)] = 1; });
      return Object.keys(seen).length;
    }
    function visibleId(n, i, depth) {
      // the outermost closed module at or below the chosen depth holds the node
      for (var d = depth; d >= 1; d++) {
        var path = modulePath(n, d);
        if (path === null) break;
        if (!state.expanded[path]) return "m:" + (n.cluster === null ? "" : n.cluster) + ":" + path;
      }
      return "n" + i;
    }

    function render() {
      var g = graphs[state.graph];
      var values = g.measures[state.measure] || {};
      var els = [];
      g.clusters.forEach(function (c) {
        els.push({ group: "nodes", data: { id: c.id, label: c.backend + " · delegate call (instruction " + c.instruction_id + ", " + c.nodes.length + " ops)", color: "#f4ecfa", text: "#6c3483" }, classes: "cluster" });
      });
      var members = {}, value = {}, order = [];
      g.nodes.forEach(function (n, i) {
        var id = visibleId(n, i, state.depth);
        if (!members[id]) { members[id] = []; order.push(id); }
        members[id].push(i);
        var v = values[n.name];
        if (v !== undefined) value[id] = (value[id] || 0) + v;
      });
      g.groups.forEach(function (grp) {
        var open = grp.nodes.some(function (i) { return members["n" + i]; });
        if (open) els.push({ group: "nodes", data: { id: grp.id, parent: g.clusters[grp.cluster].id, label: "fused · id " + grp.identifier, color: "#fdf2e9", text: "#a04000" }, classes: "fused" });
      });
      var max = 0;
      Object.keys(value).forEach(function (k) { max = Math.max(max, value[k]); });
      order.forEach(function (id) {
        var idx = members[id], first = g.nodes[idx[0]];
        var parent = first.cluster === null ? undefined : g.clusters[first.cluster].id;
        var label, classes;
        if (id.charAt(0) === "n") {
          if (first.group !== null) parent = g.groups[first.group].id;
          label = first.name + "\n" + first.op;
          classes = "op" + (first.decomposed ? " decomposed" : "");
          if (first.decomposed) label += "\n⇶ " + first.decomposed.length + " delegate events";
        } else {
          label = id.slice(id.indexOf(":", 2) + 1) + "\n" + idx.length + " ops (click to open)";
          classes = "module";
        }
        var v = value[id], lines = label.split("\n");
        var w = 12 + 5.6 * Math.max.apply(null, lines.map(function (t) { return t.length; })), h = 10 + 12 * lines.length;
        els.push({ group: "nodes", data: { id: id, parent: parent, label: label, w: w, h: h, members: idx, value: v === undefined ? null : v, color: v === undefined ? "#e3e6eb" : colour(max ? v / max : 0), text: v !== undefined && max && v / max > 0.6 ? "#fff" : "#1d2330" }, classes: classes });
      });
      var seen = {};
      g.edges.forEach(function (e) {
        var a = visibleId(g.nodes[e[0]], e[0], state.depth), b = visibleId(g.nodes[e[1]], e[1], state.depth);
        if (a === b || seen[a + ">" + b]) return;
        seen[a + ">" + b] = 1;
        els.push({ group: "edges", data: { id: "e" + a + ">" + b, source: a, target: b } });
      });
      if (report.cy) report.cy.destroy();
      var cy = cytoscape({
        container: document.getElementById("cy"),
        elements: els,
        style: [
          { selector: "node", style: { "label": "data(label)", "text-wrap": "wrap", "font-size": 9, "text-valign": "center", "text-halign": "center", "shape": "round-rectangle", "background-color": "data(color)", "color": "data(text)", "border-width": 1, "border-color": "#8a93a3" } },
          { selector: "node.op, node.module", style: { "width": "data(w)", "height": "data(h)" } },
          { selector: "node.module", style: { "shape": "barrel", "border-style": "dashed", "border-width": 2, "font-weight": "bold" } },
          { selector: "node.decomposed", style: { "border-style": "double", "border-width": 4, "border-color": "#2e86c1" } },
          { selector: "node.cluster", style: { "background-color": "#f4ecfa", "background-opacity": 0.6, "border-color": "#8e44ad", "border-width": 2, "label": "data(label)", "text-valign": "top", "text-halign": "center", "font-size": 11, "font-weight": "bold", "color": "#6c3483", "padding": 12 } },
          { selector: "node.fused", style: { "background-color": "#fdf2e9", "border-color": "#e67e22", "border-style": "dashed", "label": "data(label)", "text-valign": "top", "font-size": 9, "color": "#a04000", "padding": 8 } },
          { selector: "edge", style: { "width": 1.2, "line-color": "#9aa3b2", "target-arrow-color": "#9aa3b2", "target-arrow-shape": "triangle", "curve-style": "bezier", "arrow-scale": 0.7 } },
          { selector: "node:selected", style: { "border-color": "#1f6feb", "border-width": 3 } }
        ]
      });
      cy.layout({ name: "dagre", rankDir: "TB", nodeSep: 14, rankSep: 28, animate: false, fit: false }).run();
      report.cy = cy;
      state.autoFit = true;
      cy.on("viewport", function () { if (!fitting) state.autoFit = false; });
      fitGraph();
      cy.on("tap", "node", function (evt) {
        var node = evt.target;
        if (node.hasClass("module")) {
          state.expanded[node.id().slice(node.id().indexOf(":", 2) + 1)] = true;
          render();
          return;
        }
        showDetails(g, node);
      });
      var legend = document.getElementById("graph-legend");
      legend.innerHTML = "";
      legend.appendChild(el("span", { text: "0" }));
      legend.appendChild(el("span", { cls: "bar" }));
      legend.appendChild(el("span", { text: state.measure === "share" ? pct(max) : fmt(max) + (state.measure === "p50" ? " " + unit : "") }));
    }

    function showDetails(g, node) {
      var box = document.getElementById("details");
      box.innerHTML = "";
      if (node.hasClass("cluster")) {
        var c = g.clusters[Number(node.id().slice(1))];
        box.appendChild(el("h3", { text: "Delegate call: " + c.backend }));
        box.appendChild(el("dl", null, [el("dt", { text: "instruction" }), el("dd", { text: String(c.instruction_id) }), el("dt", { text: "operators" }), el("dd", { text: String(c.nodes.length) }), el("dt", { text: "identifiers" }), el("dd", { text: String(c.identifiers) })]));
        box.appendChild(el("div", { cls: "ops", text: c.nodes.map(function (i) { return g.nodes[i].op; }).join(", ") }));
        var callRows = [];
        for (var r = 0; r < rows.name.length; r++) if (rows.instruction_id[r] === c.instruction_id && rows.backend[r] === c.backend) callRows.push(r);
        box.appendChild(rowTable(callRows));
        return;
      }
      if (node.hasClass("fused")) {
        var grp = g.groups[Number(node.id().slice(1))];
        box.appendChild(el("h3", { text: "Fused group: identifier " + grp.identifier }));
        box.appendChild(el("div", { cls: "ops", text: grp.nodes.map(function (i) { return g.nodes[i].name + " (" + g.nodes[i].op + ")"; }).join(", ") }));
        return;
      }
      var n = g.nodes[node.data("members")[0]];
      box.appendChild(el("h3", { text: n.name }));
      var dl = el("dl");
      function item(k, v) { if (v !== null && v !== undefined && v !== "") { dl.appendChild(el("dt", { text: k })); dl.appendChild(el("dd", { text: String(v) })); } }
      item("op type", n.op);
      item("debug handle", n.handle);
      item("module", n.module.map(function (m) { return m[0] + " (" + m[1].split(".").pop() + ")"; }).join(" › "));
      item("delegate", n.cluster === null ? "portable (not delegated)" : g.clusters[n.cluster].backend + " @ instruction " + g.clusters[n.cluster].instruction_id);
      if (n.group !== null) item("fused group", "identifier " + g.groups[n.group].identifier);
      if (n.decomposed) item("decomposed into", n.decomposed.join(", "));
      Object.keys(g.measures).forEach(function (m) { var v = g.measures[m][n.name]; if (v !== undefined) item(m, m === "share" ? pct(v) : fmt(v)); });
      box.appendChild(dl);
      box.appendChild(el("h4", { text: n.rows.length + " row(s)" }));
      box.appendChild(rowTable(n.rows));
      if (n.trace) { box.appendChild(el("h4", { text: "stack trace" })); box.appendChild(el("pre", { text: n.trace })); }
    }
    report.showDetails = function (nodeId) { showDetails(graphs[state.graph], report.cy.getElementById(nodeId)); };
    report.setDepth = function (d) { state.depth = d; state.expanded = {}; depthSel.value = String(d); render(); };

    methodSel.addEventListener("change", function () { state.graph = Number(methodSel.value); setupGraph(); });
    measureSel.addEventListener("change", function () { state.measure = measureSel.value; render(); });
    depthSel.addEventListener("change", function () { state.depth = Number(depthSel.value); state.expanded = {}; render(); });
    document.getElementById("graph-fit").addEventListener("click", function () { state.autoFit = true; fitGraph(); });
    setupGraph();
  };

  /* ------------------------------------------------------------------ timeline */
  var tl = { run: 0, x0: 0, x1: 1, rects: [] };
  function sliceColour(r) {
    var name = rows.name[r];
    if (name === "Method::execute" || name === "Method::init" || name === "Program::load_method") return "#95a5a6";
    if (name === "OPERATOR_CALL") return "#5dade2";
    if (name === "DELEGATE_CALL") return "#a569bd";
    if (rows.delegated[r]) return "#f5b041";
    return "#58d68d";
  }
  function shortOp(op) { return op.replace(/^aten\./, "").replace(/\.(default|Tensor|out)$/, ""); }
  function sliceLabel(r) {
    var name = rows.name[r], ops = rows.op_types[r];
    if (name === "OPERATOR_CALL" && ops.length) return ops.map(shortOp).join(" + ");
    if (rows.delegated[r] && ops.length) return name + ": " + ops.map(shortOp).join(", ");
    return name;
  }
  function drawTimeline() {
    var canvas = document.getElementById("timeline");
    var run = data.timeline[tl.run];
    if (!run) return;
    var depthMax = 0;
    run.depth.forEach(function (d) { depthMax = Math.max(depthMax, d); });
    var rowH = 22, top = 22;
    var width = canvas.clientWidth || 800, height = top + (depthMax + 1) * rowH + 8;
    var ratio = window.devicePixelRatio || 1;
    canvas.style.height = height + "px";
    canvas.width = width * ratio;
    canvas.height = height * ratio;
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    var span = tl.x1 - tl.x0, scale = width / span;
    // time axis
    ctx.fillStyle = "#445"; ctx.font = "11px sans-serif"; ctx.strokeStyle = "#e5e8ee";
    var step = Math.pow(10, Math.floor(Math.log10(span / 5)));
    if (span / step > 12) step *= 2;
    if (span / step > 12) step *= 2.5;
    for (var t = Math.ceil(tl.x0 / step) * step; t <= tl.x1; t += step) {
      var x = (t - tl.x0) * scale;
      ctx.beginPath(); ctx.moveTo(x, top - 4); ctx.lineTo(x, height); ctx.stroke();
      ctx.fillText(fmt(t) + " " + unit, x + 2, 12);
    }
    tl.rects = [];
    var drawn = 0;
    for (var i = 0; i < run.row.length; i++) {
      var s = run.start[i], e = s + run.dur[i];
      if (e < tl.x0 || s > tl.x1) continue;
      var x0 = (s - tl.x0) * scale, w = Math.max(1, run.dur[i] * scale), y = top + run.depth[i] * rowH;
      ctx.fillStyle = sliceColour(run.row[i]);
      ctx.fillRect(x0, y, w, rowH - 2);
      if (w > 30) {
        ctx.save(); ctx.beginPath(); ctx.rect(x0, y, w, rowH - 2); ctx.clip();
        ctx.fillStyle = "#1d2330"; ctx.fillText(sliceLabel(run.row[i]), x0 + 3, y + 14); ctx.restore();
      }
      tl.rects.push([x0, y, w, rowH - 2, i]);
      drawn++;
    }
    report.timeline.drawn = drawn;
  }
  function resetZoom() {
    var run = data.timeline[tl.run];
    var end = 0;
    run.start.forEach(function (s, i) { end = Math.max(end, s + run.dur[i]); });
    tl.x0 = 0; tl.x1 = end > 0 ? end * 1.01 : 1;
    drawTimeline();
  }
  function hit(evt) {
    var canvas = document.getElementById("timeline"), box = canvas.getBoundingClientRect();
    var x = evt.clientX - box.left, y = evt.clientY - box.top, found = null;
    tl.rects.forEach(function (r) { if (x >= r[0] && x <= r[0] + r[2] && y >= r[1] && y <= r[1] + r[3]) found = r[4]; });
    return found;
  }
  report.views.timeline = function () {
    var sel = document.getElementById("timeline-run");
    var cmd = "delegate-lens inspect " + (data.meta.etdump || "ETDUMP") + (data.meta.etrecord ? " --etrecord " + data.meta.etrecord : "") + " --format chrome-trace -o trace.json";
    document.querySelector("#perfetto code").textContent = cmd;
    if (!data.timeline.length) {
      document.getElementById("timeline").hidden = true;
      document.getElementById("timeline-detail").textContent = "This ETDump holds no profile events.";
      return;
    }
    data.timeline.forEach(function (r, i) {
      sel.appendChild(el("option", { value: String(i), text: "run " + r.run + ": " + r.name + " (" + blockLabel(r.block) + ")" + (r.why ? " · " + r.why : "") }));
    });
    var total = data.meta.runs;
    if (data.timeline.length < total) {
      sel.parentNode.appendChild(el("span", { cls: "hint", text: data.timeline.length + " of " + total + " runs sampled (first, fastest, median, slowest, last of each block)" }));
    }
    sel.addEventListener("change", function () { tl.run = Number(sel.value); resetZoom(); });
    // open the first inference run rather than the method load when there is one
    var pick = 0;
    data.timeline.forEach(function (r, i) { if (pick === 0 && data.blocks[r.block].runs > 1) pick = i; });
    data.timeline.forEach(function (r, i) { if (r.why.indexOf("chosen") >= 0 && data.timeline[pick].why.indexOf("chosen") < 0) pick = i; });
    tl.run = pick; sel.value = String(pick);
    var canvas = document.getElementById("timeline"), tip = document.getElementById("timeline-tip");
    canvas.addEventListener("wheel", function (evt) {
      evt.preventDefault();
      var box = canvas.getBoundingClientRect(), f = (evt.clientX - box.left) / box.width;
      var at = tl.x0 + f * (tl.x1 - tl.x0), k = evt.deltaY < 0 ? 0.8 : 1.25;
      tl.x0 = at - (at - tl.x0) * k; tl.x1 = at + (tl.x1 - at) * k;
      drawTimeline();
    }, { passive: false });
    var drag = null;
    canvas.addEventListener("mousedown", function (evt) { drag = { x: evt.clientX, x0: tl.x0, x1: tl.x1, moved: false }; });
    window.addEventListener("mouseup", function () { setTimeout(function () { drag = null; }, 0); });
    canvas.addEventListener("mousemove", function (evt) {
      if (drag && evt.buttons) {
        var dt = (evt.clientX - drag.x) / canvas.clientWidth * (drag.x1 - drag.x0);
        if (Math.abs(evt.clientX - drag.x) > 2) drag.moved = true;
        tl.x0 = drag.x0 - dt; tl.x1 = drag.x1 - dt; drawTimeline();
        return;
      }
      var i = hit(evt), run = data.timeline[tl.run];
      if (i === null) { tip.hidden = true; return; }
      tip.hidden = false; tip.style.left = evt.clientX + 12 + "px"; tip.style.top = evt.clientY + 12 + "px";
      tip.textContent = rows.name[run.row[i]] + " · " + fmt(run.dur[i]) + " " + unit;
    });
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
    canvas.addEventListener("click", function (evt) {
      if (drag && drag.moved) return;
      var i = hit(evt);
      if (i === null) return;
      var run = data.timeline[tl.run], r = run.row[i], box = document.getElementById("timeline-detail");
      box.innerHTML = "";
      box.appendChild(el("h4", { text: rows.name[r] + " at " + fmt(run.start[i]) + " " + unit + ", " + fmt(run.dur[i]) + " " + unit + (rows.op_types[r].length ? " · " + rows.op_types[r].join(", ") : "") }));
      box.appendChild(rowTable([r]));
    });
    document.getElementById("timeline-reset").addEventListener("click", resetZoom);
    window.addEventListener("resize", function () { if (report.current === "timeline") drawTimeline(); });
    resetZoom();
  };

  /* ------------------------------------------------------------------ tables */
  var COLUMNS = [
    ["block", "block", false], ["name", "name", false], ["instruction_id", "instr", true],
    ["identifier", "delegate id", false], ["backend", "backend", false], ["n", "n", true],
    ["p10", "p10", true], ["p50", "p50", true], ["p90", "p90", true], ["avg", "avg", true],
    ["min", "min", true], ["max", "max", true], ["op_types", "op types", false],
    ["handles", "handles", false], ["modules", "modules", false], ["n_debug_data", "debug values", true]
  ];
  var sortState = { key: null, dir: 1 };
  function cellText(key, r) {
    var v = rows[key][r];
    if (key === "block") return data.blocks[v].name;
    if (Array.isArray(v)) return v.join(", ");
    return v === null || v === undefined ? "" : typeof v === "number" ? fmt(v) : String(v);
  }
  function renderRows() {
    var table = document.getElementById("rows-table");
    var q = document.getElementById("rows-filter").value.trim().toLowerCase();
    var blk = document.getElementById("rows-block").value;
    var ids = [];
    for (var r = 0; r < rows.name.length; r++) {
      if (blk !== "" && String(rows.block[r]) !== blk) continue;
      if (q) {
        var hay = (rows.name[r] + " " + rows.op_types[r].join(" ") + " " + rows.modules[r].join(" ") + " " + (rows.backend[r] || "")).toLowerCase();
        if (hay.indexOf(q) < 0) continue;
      }
      ids.push(r);
    }
    if (sortState.key) {
      var key = sortState.key, numeric = COLUMNS.filter(function (c) { return c[0] === key; })[0][2];
      ids.sort(function (a, b) {
        var x = rows[key][a], y = rows[key][b];
        if (numeric) {
          if (x === null) return 1; if (y === null) return -1;
          return (x - y) * sortState.dir;
        }
        return cellText(key, a).localeCompare(cellText(key, b)) * sortState.dir;
      });
    }
    table.innerHTML = "";
    var head = el("tr");
    COLUMNS.forEach(function (c) {
      var th = el("th", { "data-key": c[0], text: c[1] + (c[2] && ["n", "instruction_id", "n_debug_data"].indexOf(c[0]) < 0 ? " (" + unit + ")" : "") });
      if (sortState.key === c[0]) th.className = sortState.dir > 0 ? "sorted-asc" : "sorted-desc";
      th.addEventListener("click", function () {
        sortState.dir = sortState.key === c[0] ? -sortState.dir : (c[2] ? -1 : 1);
        sortState.key = c[0];
        renderRows();
      });
      head.appendChild(th);
    });
    var thead = el("thead", null, [head]), tbody = el("tbody");
    table.appendChild(thead); table.appendChild(tbody);
    var frag = document.createDocumentFragment();
    ids.forEach(function (r) {
      var tr = el("tr", { cls: rows.delegated[r] ? "delegated" : "", "data-row": String(r) });
      COLUMNS.forEach(function (c) { tr.appendChild(el("td", { cls: c[2] ? "num" : "", text: cellText(c[0], r) })); });
      frag.appendChild(tr);
    });
    tbody.appendChild(frag);
    document.getElementById("rows-count").textContent = ids.length + " of " + rows.name.length + " rows";
  }
  function simpleTable(id, header, body) {
    var table = document.getElementById(id) || el("table", { cls: "data" });
    table.innerHTML = "";
    table.appendChild(el("tr", null, header.map(function (h) { return el("th", { text: h }); })));
    body.forEach(function (cells) {
      table.appendChild(el("tr", null, cells.map(function (c) { return c instanceof Node ? el("td", null, [c]) : el("td", { cls: typeof c === "number" ? "num" : "", text: typeof c === "number" ? fmt(c) : c }); })));
    });
    return table;
  }
  report.views.tables = function () {
    var blockSel = document.getElementById("rows-block");
    blockSel.appendChild(el("option", { value: "", text: "all" }));
    data.blocks.forEach(function (b) { blockSel.appendChild(el("option", { value: String(b.index), text: blockLabel(b.index) })); });
    document.getElementById("rows-filter").addEventListener("input", renderRows);
    blockSel.addEventListener("change", renderRows);
    renderRows();
    simpleTable("top-table", ["block", "op type", "kind", "count / run", "time / run (" + unit + ")", "total, all runs (" + unit + ")", "share"], data.top_operators.map(function (o) { return [blockLabel(o.block), o.op_type, o.kind, o.count, o.time_per_run, o.total, pct(o.share) + " of " + o.denominator]; }));
    simpleTable("share-table", ["block", "Method::execute / run", "delegated / run", "portable / run", "delegated share"], data.shares.map(function (s) {
      var bar = el("span", null, [
        el("span", { cls: "share", style: "width:" + Math.round(80 * (s.delegated_share || 0)) + "px" }),
        el("span", { cls: "share portable", style: "width:" + Math.round(80 * (s.delegated_share === null ? 0 : 1 - s.delegated_share)) + "px" }),
        " " + pct(s.delegated_share)
      ]);
      return [blockLabel(s.block), s.execute === null ? "" : s.execute, s.delegated, s.portable, bar];
    }));
    simpleTable("module-table", ["block", "module", "type", "count / run", "time / run (" + unit + ")", "share"], (data.modules || []).map(function (m) {
      var pad = m.kind === "module" ? Math.max(0, m.depth - 1) : 0;
      return [blockLabel(m.block), el("span", { style: "padding-left:" + (1.2 * pad) + "em", text: m.module }), m.type, m.count, m.time_per_run, pct(m.share) + " of " + m.denominator];
    }));
    var box = document.getElementById("summary");
    if (!data.summary.length) { box.appendChild(el("p", { cls: "hint", text: "Needs an ETRecord (--etrecord)." })); return; }
    data.summary.forEach(function (s, i) {
      box.appendChild(el("p", { text: "method " + data.graphs[i].method + ": " + s.num_delegated_subgraphs + " delegated subgraph(s)" + Object.keys(s.backends).map(function (b) { return " · " + b + " ×" + s.backends[b]; }).join("") }));
      var body = s.rows.map(function (r) { return [r[0], String(r[1]), String(r[2])]; });
      body.push(["Total", String(s.total[0]), String(s.total[1])]);
      box.appendChild(simpleTable("summary-" + i, s.columns, body));
    });
  };

  show(data.graphs.length ? "graph" : "tables");
})();
