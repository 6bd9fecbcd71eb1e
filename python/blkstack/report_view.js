/* blkstack report: the interactive timeline (no library, nothing fetched).
 *
 * Reads the JSON block #blkstack-data written by blkstack/report_data.py and
 * draws, for the view chosen in #view (an array with its members, one
 * device, or one device across runs), SVG charts sharing one time axis:
 * requests by start sector (seekwatcher's picture), throughput, seeks per
 * second, and requests in flight. Wheel zooms on time around the pointer,
 * dragging pans, a double click (or "reset") shows the whole run; hovering
 * a point shows its request, hovering a line chart the values at that time.
 *
 * Bins: the page holds each series in FINE fixed bins over the whole run
 * and merges k adjacent bins for display, k chosen from the visible span
 * and aligned to bin 0, so every display bin covers whole fine bins:
 * throughput and seek rates never alias against the bin grid as the view
 * moves. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("blkstack-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var W = 1000, ML = 72, MR = 170, MT = 10, MB = 34, PW = W - ML - MR;
  var MAX_DISPLAY_BINS = 250;
  var state = { t0: 0, t1: D.t_end_us, view: 0 };
  var charts = [];
  var tip = document.getElementById("tip");
  var rangeText = document.getElementById("range");
  var picker = document.getElementById("view");
  var box = document.getElementById("charts");
  var note = document.getElementById("view-note");

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }

  function timeUnit(span) {
    if (span >= 2e6) { return ["s", 1e-6]; }
    if (span >= 2e3) { return ["ms", 1e-3]; }
    return ["\u00b5s", 1];
  }

  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1e12) { return (v / 1e12).toPrecision(3) + "T"; }
    if (a >= 1e9) { return (v / 1e9).toPrecision(3) + "G"; }
    if (a >= 1e6) { return (v / 1e6).toPrecision(3) + "M"; }
    if (a >= 1e4) { return (v / 1e3).toPrecision(3) + "k"; }
    if (a === 0 || a >= 1) { return String(Math.round(v * 100) / 100); }
    return v.toPrecision(2);
  }

  function fmtTime(us) {
    var u = timeUnit(Math.abs(us) || 1);
    return (us * u[1]).toFixed(3) + " " + u[0];
  }

  function ticks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) { return [lo]; }
    var step = Math.pow(10, Math.floor(Math.log(span / n) / Math.LN10));
    var err = span / n / step;
    if (err >= 7.5) { step *= 10; } else if (err >= 3.5) { step *= 5; } else if (err >= 1.5) { step *= 2; }
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) { out.push(v); }
    return out;
  }

  /* Display bins for the visible span: k fine bins each, aligned to 0. */
  function displayBins() {
    var w = D.t_end_us / D.bins;
    var first = Math.max(0, Math.floor(state.t0 / w)), last = Math.min(D.bins, Math.ceil(state.t1 / w));
    var k = Math.max(1, Math.ceil((last - first) / MAX_DISPLAY_BINS));
    first -= first % k;
    return { w: w, k: k, first: first, last: last };
  }

  function merge(values, b, how) {
    var out = [];
    for (var i = b.first; i < b.last; i += b.k) {
      var acc = how === "min" ? Infinity : how === "max" ? -Infinity : 0, n = 0;
      for (var j = i; j < Math.min(i + b.k, D.bins); j++) {
        var v = values[j];
        if (how === "min") { acc = Math.min(acc, v); } else if (how === "max") { acc = Math.max(acc, v); } else { acc += v; }
        n++;
      }
      if (how === "mean") { acc = n ? acc / n : 0; }
      out.push({ t0: i * b.w, t1: Math.min(i + b.k, D.bins) * b.w, v: acc });
    }
    return out;
  }

  function tx(t) { return ML + (t - state.t0) / (state.t1 - state.t0) * PW; }

  function axes(svg, h, ylo, yhi, ylabel, log) {
    var u = timeUnit(state.t1 - state.t0);
    el("rect", { x: ML, y: MT, width: PW, height: h - MT - MB, fill: "#fff", stroke: "#bbb" }, svg);
    ticks(state.t0, state.t1, 8).forEach(function (t) {
      var x = tx(t);
      el("line", { x1: x, x2: x, y1: MT, y2: h - MB, stroke: "#eee" }, svg);
      el("text", { x: x, y: h - MB + 14, "text-anchor": "middle", "class": "tick" }, svg).textContent = fmt(t * u[1]);
    });
    el("text", { x: ML + PW / 2, y: h - 4, "text-anchor": "middle", "class": "axis" }, svg).textContent = "time (" + u[0] + ")";
    ticks(ylo, yhi, 4).forEach(function (v) {
      var y = ty(v, h, ylo, yhi);
      el("line", { x1: ML, x2: ML + PW, y1: y, y2: y, stroke: "#eee" }, svg);
      el("text", { x: ML - 4, y: y + 4, "text-anchor": "end", "class": "tick" }, svg).textContent = fmt(v);
    });
    var lab = el("text", { x: 12, y: MT + (h - MT - MB) / 2, "text-anchor": "middle", "class": "axis",
      transform: "rotate(-90 12 " + (MT + (h - MT - MB) / 2) + ")" }, svg);
    lab.textContent = ylabel;
  }

  function ty(v, h, lo, hi) {
    var top = MT, bottom = h - MB;
    return hi > lo ? bottom - (v - lo) / (hi - lo) * (bottom - top) : bottom;
  }

  function legend(svg, items) {
    items.forEach(function (it, i) {
      var y = MT + 8 + i * 15;
      el("rect", { x: W - MR + 10, y: y - 8, width: 10, height: 10, fill: it.colour }, svg);
      el("text", { x: W - MR + 25, y: y + 1, "class": "legend" }, svg).textContent = it.label;
    });
  }

  function clip(svg, h) {
    var id = "clip" + Math.random().toString(36).slice(2);
    var cp = el("clipPath", { id: id }, el("defs", {}, svg));
    el("rect", { x: ML, y: MT, width: PW, height: h - MT - MB }, cp);
    return el("g", { "clip-path": "url(#" + id + ")" }, svg);
  }

  function chart(title, h, draw) {
    var fig = document.createElement("figure");
    fig.className = "chart";
    var cap = document.createElement("figcaption");
    cap.textContent = title;
    fig.appendChild(cap);
    var svg = el("svg", { viewBox: "0 0 " + W + " " + h, width: "100%", "data-kind": title }, fig);
    box.appendChild(fig);
    var c = { svg: svg, h: h, draw: draw, hover: null };
    attach(c);
    charts.push(c);
    return c;
  }

  /* Requests (or bios) at their time and start sector, a bar over the
   * sectors they cover; colour by operation or by series. */
  function lbaChart(panel) {
    var sers = panel.series.map(function (i) { return D.series[i]; });
    var byOp = sers.length === 1;
    var title = panel.title + (sers.some(function (s) { return s.pts.shown < s.pts.total; })
      ? " (" + sers.map(function (s) { return s.pts.shown.toLocaleString() + " of " + s.pts.total.toLocaleString(); }).join(", ") + " shown: one per pixel cell)" : "");
    chart(title, 260, function (c) {
      var svg = c.svg, h = c.h, lo = Infinity, hi = -Infinity;
      sers.forEach(function (s) {
        for (var i = 0; i < s.pts.t.length; i++) {
          if (s.pts.t[i] < state.t0 || s.pts.t[i] > state.t1) { continue; }
          lo = Math.min(lo, s.pts.s[i]); hi = Math.max(hi, s.pts.s[i] + s.pts.n[i]);
        }
      });
      if (lo === Infinity) { lo = 0; hi = 1; }
      if (hi === lo) { hi = lo + 1; }
      axes(svg, h, lo, hi, "sector", false);
      var g = clip(svg, h), hit = [], legendItems = [];
      sers.forEach(function (s) {
        var paths = {};
        for (var i = 0; i < s.pts.t.length; i++) {
          var t = s.pts.t[i];
          if (t < state.t0 || t > state.t1) { continue; }
          var key = byOp ? s.pts.op[i] : 0;
          var x = tx(t), y1 = ty(s.pts.s[i], h, lo, hi), y2 = ty(s.pts.s[i] + s.pts.n[i], h, lo, hi);
          paths[key] = (paths[key] || "") + "M" + x.toFixed(1) + " " + y1.toFixed(1) + "V" + Math.min(y2, y1 - 0.01).toFixed(1);
          hit.push([x, y1, s, i]);
        }
        Object.keys(paths).forEach(function (key) {
          var colour = byOp ? D.op_colours[key] : s.colour;
          el("path", { d: paths[key], stroke: colour, "stroke-width": 3.5, "stroke-linecap": "round", "stroke-opacity": 0.75, fill: "none" }, g);
        });
        if (!byOp) { legendItems.push({ label: s.label, colour: s.colour }); }
      });
      if (byOp) {
        D.ops.forEach(function (name, k) {
          if (sers[0].pts.op.indexOf(k) >= 0) { legendItems.push({ label: name, colour: D.op_colours[k] }); }
        });
      }
      legend(svg, legendItems);
      c.hover = function (mx, my) {
        var best = null, bd = 64;
        hit.forEach(function (p) {
          var d = (p[0] - mx) * (p[0] - mx) + (p[1] - my) * (p[1] - my);
          if (d < bd) { bd = d; best = p; }
        });
        if (!best) { return null; }
        var s = best[2], i = best[3], lat = s.pts.lat[i];
        return s.label + "  " + fmtTime(s.pts.t[i]) + "\n" + D.actions[s.action] + " " + D.rwbs[s.pts.rw[i]] + "  sector " + s.pts.s[i] +
          " + " + s.pts.n[i] + "  (" + fmt(s.pts.n[i] * 512 / 1024) + " KiB)\n" +
          (lat >= 0 ? s.action + "\u2192C " + fmtTime(lat) : "no completion") + "  " + D.comms[s.pts.comm[i]];
      };
    });
  }

  /* A stairs chart of binned series: what(s, b) gives [{t0,t1,v}] and
   * optionally a band [{t0,t1,lo,hi}]. */
  function lineChart(title, ylabel, lines) {
    chart(title, 170, function (c) {
      var svg = c.svg, h = c.h, b = displayBins(), hi = 0, drawn = [];
      lines.forEach(function (ln) {
        var bins = ln.values(b), band = ln.band ? ln.band(b) : null;
        bins.forEach(function (x) { hi = Math.max(hi, x.v); });
        if (band) { band.forEach(function (x) { hi = Math.max(hi, x.hi); }); }
        drawn.push({ ln: ln, bins: bins, band: band });
      });
      if (!(hi > 0)) { hi = 1; }
      axes(svg, h, 0, hi * 1.05, ylabel, false);
      var g = clip(svg, h);
      drawn.forEach(function (d) {
        if (d.band) {
          var top = "", bottom = "";
          d.band.forEach(function (x) {
            top += "L" + tx(x.t0).toFixed(1) + " " + ty(x.hi, h, 0, hi * 1.05).toFixed(1) + "H" + tx(x.t1).toFixed(1);
            bottom = "L" + tx(x.t1).toFixed(1) + " " + ty(x.lo, h, 0, hi * 1.05).toFixed(1) + "H" + tx(x.t0).toFixed(1) + bottom;
          });
          if (top) { el("path", { d: "M" + top.slice(1) + bottom + "Z", fill: d.ln.colour, "fill-opacity": 0.18, stroke: "none" }, g); }
        }
        var p = "";
        d.bins.forEach(function (x, i) {
          var y = ty(x.v, h, 0, hi * 1.05).toFixed(1);
          p += (i ? "L" : "M") + tx(x.t0).toFixed(1) + " " + y + "H" + tx(x.t1).toFixed(1);
        });
        if (p) { el("path", { d: p, stroke: d.ln.colour, "stroke-width": 1.4, fill: "none", "stroke-dasharray": d.ln.dash || "" }, g); }
      });
      legend(svg, lines.map(function (ln) { return { label: ln.label, colour: ln.colour }; }));
      c.hover = function (mx) {
        if (mx < ML || mx > ML + PW) { return null; }
        var t = state.t0 + (mx - ML) / PW * (state.t1 - state.t0), out = [fmtTime(t)];
        drawn.forEach(function (d) {
          d.bins.forEach(function (x, i) {
            if (t >= x.t0 && t < x.t1) {
              var extra = d.band ? "  (" + fmt(d.band[i].lo) + "\u2013" + fmt(d.band[i].hi) + ")" : "";
              out.push(d.ln.label + ": " + fmt(x.v) + " " + ylabel + extra);
            }
          });
        });
        return out.join("\n");
      };
    });
  }

  function rate(values, per) {
    return function (b) {
      return merge(values, b, "sum").map(function (x) { return { t0: x.t0, t1: x.t1, v: x.v / ((x.t1 - x.t0) * 1e-6) / per }; });
    };
  }

  function build() {
    charts = [];
    while (box.firstChild) { box.removeChild(box.firstChild); }
    var v = D.views[state.view];
    note.textContent = v.note;
    v.lba.forEach(lbaChart);
    var sers = v.lines.map(function (i) { return D.series[i]; });
    var one = sers.length === 1, tput = [], seeks = [], depth = [];
    sers.forEach(function (s) {
      if (s.tput) {
        s.tput.forEach(function (opv) {
          tput.push({ label: one ? D.ops[opv[0]] : s.label + " " + D.ops[opv[0]], colour: one ? D.op_colours[opv[0]] : s.colour,
            dash: one || opv[0] === 0 ? "" : "4 2", values: rate(opv[1], 1e6) });
        });
      }
      seeks.push({ label: s.label, colour: s.colour, values: rate(s.seeks, 1) });
      if (s.depth) {
        depth.push({ label: s.label, colour: s.colour,
          values: function (b) { return merge(s.depth.mean, b, "mean"); },
          band: function (b) {
            var lo = merge(s.depth.lo, b, "min"), hi = merge(s.depth.hi, b, "max");
            return lo.map(function (x, i) { return { t0: x.t0, t1: x.t1, lo: x.v, hi: hi[i].v }; });
          } });
      }
    });
    if (tput.length) { lineChart("throughput (MB/s, each request's bytes spread over its time in the device)", "MB/s", tput); }
    lineChart("seeks per second (issued " + (sers[0] && sers[0].action === "Q" ? "bios" : "requests") + " not starting where the previous one ended)", "seeks/s", seeks);
    if (depth.length) { lineChart("in flight: mean per bin, band from least to most", "in flight", depth); }
    var missing = sers.filter(function (s) { return !s.tput; }).map(function (s) { return s.label; });
    if (missing.length) {
      var p = document.createElement("p");
      p.className = "note";
      p.textContent = missing.join(", ") + ": no completions in the trace, so no throughput or depth.";
      box.appendChild(p);
    }
    redraw();
  }

  function redraw() {
    charts.forEach(function (c) {
      while (c.svg.firstChild) { c.svg.removeChild(c.svg.firstChild); }
      c.draw(c);
    });
    var u = timeUnit(state.t1 - state.t0), whole = timeUnit(D.t_end_us);
    rangeText.textContent = (state.t0 * u[1]).toFixed(3) + " \u2013 " + (state.t1 * u[1]).toFixed(3) + " " + u[0] +
      " of " + (D.t_end_us * whole[1]).toFixed(3) + " " + whole[0];
    rangeText.setAttribute("data-t0", state.t0);
    rangeText.setAttribute("data-t1", state.t1);
  }

  function setRange(t0, t1) {
    var span = Math.max(t1 - t0, D.t_end_us / 1e6, 1e-3);
    span = Math.min(span, D.t_end_us);
    t0 = Math.max(0, Math.min(t0, D.t_end_us - span));
    state.t0 = t0;
    state.t1 = t0 + span;
    redraw();
  }

  function zoom(factor, at) {
    setRange(at - (at - state.t0) * factor, at + (state.t1 - at) * factor);
  }

  function pointer(c, ev) {
    var r = c.svg.getBoundingClientRect();
    return [(ev.clientX - r.left) * W / r.width, (ev.clientY - r.top) * c.h / r.height];
  }

  function attach(c) {
    var drag = null;
    c.svg.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var p = pointer(c, ev), at = state.t0 + (p[0] - ML) / PW * (state.t1 - state.t0);
      zoom(ev.deltaY < 0 ? 0.8 : 1.25, Math.max(state.t0, Math.min(state.t1, at)));
    }, { passive: false });
    c.svg.addEventListener("mousedown", function (ev) { drag = { x: pointer(c, ev)[0], t0: state.t0, t1: state.t1 }; ev.preventDefault(); });
    window.addEventListener("mouseup", function () { drag = null; });
    c.svg.addEventListener("mousemove", function (ev) {
      var p = pointer(c, ev);
      if (drag) {
        var dt = (p[0] - drag.x) / PW * (drag.t1 - drag.t0);
        setRange(drag.t0 - dt, drag.t1 - dt);
        return;
      }
      var text = c.hover ? c.hover(p[0], p[1]) : null;
      if (!text) { tip.style.display = "none"; return; }
      tip.textContent = text;
      tip.style.display = "block";
      tip.style.left = (ev.pageX + 14) + "px";
      tip.style.top = (ev.pageY + 10) + "px";
    });
    c.svg.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    c.svg.addEventListener("dblclick", function () { setRange(0, D.t_end_us); });
  }

  D.views.forEach(function (v, i) {
    var o = document.createElement("option");
    o.value = String(i);
    o.textContent = v.name;
    picker.appendChild(o);
  });
  picker.addEventListener("change", function () { state.view = Number(picker.value); build(); });
  document.getElementById("zoom-in").addEventListener("click", function () { zoom(0.5, (state.t0 + state.t1) / 2); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoom(2, (state.t0 + state.t1) / 2); });
  document.getElementById("zoom-reset").addEventListener("click", function () { setRange(0, D.t_end_us); });
  if (D.views.length) { build(); } else { note.textContent = "No device issued a request: nothing to draw."; }
}());
