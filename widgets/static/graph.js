// The job-graph canvas: Graphviz's SVG (laid out in Python), made clickable, zoomable and pannable.
// Python owns all logic; this file only draws what the model says:
//   svg         the drawing;  operators  {svg node id: operator name}
//   badge_lines lines Graphviz left free at the bottom of each box for a badge
//   selected    the operator clicked (written here, read in Python)
//   highlighted {operator: badge text}  (the what-if restart set)
//   states      {operator: {state, text}}  (live run or replayed log)
// No network: nothing is fetched, everything ships in the package.
//
// The view: the drawing sits in a scrolling box (wheel and trackpad pan it natively; so does
// dragging its background); Ctrl/Cmd + wheel, a trackpad pinch, two fingers, or the buttons
// zoom. The default view shows the whole graph, but never below the scale where the smallest
// text is MIN_TEXT_PX: a bigger drawing scrolls instead of shrinking out of reach.

const SVG_NS = "http://www.w3.org/2000/svg";
const STATES = ["pending", "running", "finished", "failed", "recovered"];
const MIN_TEXT_PX = 11;
const MIN_SCALE = 0.05, MAX_SCALE = 4, STEP = 1.25;
const BADGE_FONT = 10, BADGE_LINE = 12, BADGE_PAD = 4;  // SVG units (points)

function pixels(length) {  // Graphviz writes "612pt"; CSS pixels at the natural size
  const value = parseFloat(length) || 0;
  return /pt$/.test(String(length)) ? value * 4 / 3 : value;
}

function render({ model, el }) {
  el.classList.add("fw-graph");
  const bar = document.createElement("div");
  bar.className = "fw-graph-toolbar";
  const box = document.createElement("div");
  box.className = "fw-graph-svg";
  el.append(bar, box);
  const level = document.createElement("span");
  level.className = "fw-zoom-level";
  function button(cls, text, label, action) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "fw-zoom " + cls;
    b.textContent = text;
    b.title = label;
    b.setAttribute("aria-label", label);
    b.addEventListener("click", action);
    bar.appendChild(b);
    return b;
  }
  button("fw-zoom-out", "\u2212", "zoom out", () => { touched = true; zoomBy(1 / STEP); });
  button("fw-zoom-in", "+", "zoom in", () => { touched = true; zoomBy(STEP); });
  button("fw-zoom-fit", "fit", "fit the whole graph in view", () => { touched = true; fitAll(); });
  button("fw-zoom-reset", "reset", "the default view: as much as fits, no text under 11 px", () => { touched = false; defaultView(); });
  bar.appendChild(level);

  let nodes = {};
  let svg = null;
  let natural = { w: 0, h: 0 };  // CSS pixels at scale 1
  let scale = 1;
  let readable = 0;  // the smallest scale at which every text is MIN_TEXT_PX
  let touched = false;  // the reader zoomed or dragged: keep their view when the cell is resized
  let width = 0;  // the box's width the default view was made for

  function select(id) {
    model.set("selected", model.get("operators")[id]);
    model.save_changes();
  }

  function draw() {
    box.innerHTML = model.get("svg");
    svg = box.querySelector("svg");
    nodes = {};
    if (!svg) return;
    natural = { w: pixels(svg.getAttribute("width")), h: pixels(svg.getAttribute("height")) };
    const units = svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width;
    const perUnit = units ? natural.w / units : 1;  // CSS px per SVG unit at scale 1
    let smallest = BADGE_FONT;
    for (const t of svg.querySelectorAll("text")) {
      const size = parseFloat(t.getAttribute("font-size"));
      if (size > 0) smallest = Math.min(smallest, size);
    }
    readable = MIN_TEXT_PX / (smallest * perUnit);
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    const operators = model.get("operators");
    for (const g of svg.querySelectorAll("g.node")) {
      const title = g.querySelector("title");
      const id = title ? title.textContent.trim() : "";
      if (!(id in operators)) continue;
      nodes[id] = g;
      g.classList.add("fw-op");
      g.dataset.operator = operators[id];
      g.setAttribute("role", "button");
      g.setAttribute("tabindex", "0");
      g.setAttribute("aria-label", operators[id]);
      g.addEventListener("click", () => select(id));
      g.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(id); }
      });
    }
    touched = false;
    defaultView();
    decorate();
  }

  // -- zoom and pan -----------------------------------------------------------------------------

  function setScale(s, ax, ay) {  // (ax, ay): the point of the box that stays put, in box pixels
    if (!svg) return;
    s = Math.min(MAX_SCALE, Math.max(MIN_SCALE, s));
    if (ax === undefined) { ax = box.clientWidth / 2; ay = box.clientHeight / 2; }
    const x = (box.scrollLeft + ax) / scale, y = (box.scrollTop + ay) / scale;
    scale = s;
    svg.style.width = natural.w * s + "px";
    svg.style.height = natural.h * s + "px";
    box.scrollLeft = x * s - ax;
    box.scrollTop = y * s - ay;
    level.textContent = Math.round(s * 100) + "%";
    el.dataset.scale = String(s);
    el.dataset.readable = String(readable);
  }

  function zoomBy(factor, ax, ay) { setScale(scale * factor, ax, ay); }

  function room() {  // the box's width, and the height it may grow to
    const height = parseFloat(getComputedStyle(box).maxHeight) || 0.8 * window.innerHeight;
    return { w: box.clientWidth, h: height };
  }

  function defaultView() {  // also called when the box first gets a width (see the observer below)
    if (!svg) return;
    const { w, h } = room();
    width = w;
    if (!w) return;
    setScale(Math.max(readable, Math.min(1, (w - 2) / natural.w, (h - 2) / natural.h)), 0, 0);
    box.scrollLeft = 0;
    box.scrollTop = 0;
  }

  function fitAll() {
    if (!svg) return;
    const { w, h } = room();
    setScale(Math.min(1, (w - 2) / natural.w, (h - 2) / natural.h), 0, 0);
    box.scrollLeft = 0;
    box.scrollTop = 0;
  }

  function at(e) {
    const r = box.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  box.addEventListener("wheel", (e) => {  // plain wheel: the box scrolls; with Ctrl/Cmd or a pinch: zoom
    if (!e.ctrlKey && !e.metaKey) return;
    e.preventDefault();
    touched = true;
    zoomBy(Math.exp(-e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.002)), ...at(e));
  }, { passive: false });

  const pointers = new Map();
  let drag = null, dragged = false, pinch = null;
  box.addEventListener("pointerdown", (e) => {
    if (e.pointerType === "mouse" && e.button !== 0) return;
    pointers.set(e.pointerId, at(e));
    dragged = false;
    if (pointers.size === 1) {
      drag = { x: e.clientX, y: e.clientY, left: box.scrollLeft, top: box.scrollTop, id: e.pointerId };
    } else if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      pinch = { d: Math.hypot(a[0] - b[0], a[1] - b[1]) || 1, s: scale };
      drag = null;
    }
  });
  box.addEventListener("pointermove", (e) => {
    if (!pointers.has(e.pointerId)) return;
    pointers.set(e.pointerId, at(e));
    if (pinch && pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      const d = Math.hypot(a[0] - b[0], a[1] - b[1]);
      setScale(pinch.s * d / pinch.d, (a[0] + b[0]) / 2, (a[1] + b[1]) / 2);
      dragged = touched = true;
    } else if (drag && drag.id === e.pointerId) {
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!dragged && Math.hypot(dx, dy) < 4) return;
      if (!dragged) { dragged = touched = true; box.setPointerCapture(e.pointerId); box.classList.add("fw-panning"); }
      box.scrollLeft = drag.left - dx;
      box.scrollTop = drag.top - dy;
    }
  });
  function release(e) {
    pointers.delete(e.pointerId);
    if (pointers.size < 2) pinch = null;
    if (!pointers.size) { drag = null; box.classList.remove("fw-panning"); }
  }
  box.addEventListener("pointerup", release);
  box.addEventListener("pointercancel", release);
  box.addEventListener("click", (e) => {  // the click that ends a drag selects nothing
    if (dragged) { e.stopPropagation(); e.preventDefault(); dragged = false; }
  }, true);

  // -- badges: in the band Graphviz left free at the bottom of each box -----------------------

  function lines(t, parts, width) {  // parts packed into lines no wider than `width`
    const out = [];
    for (const part of parts) {
      const joined = out.length ? out[out.length - 1] + " \u00b7 " + part : null;
      t.textContent = joined;
      if (joined !== null && t.getComputedTextLength() <= width) out[out.length - 1] = joined;
      else out.push(part);
    }
    return out.map((line) => {  // a single part wider than the box: shortened, whole in the tooltip
      t.textContent = line;
      while (line.length > 1 && t.getComputedTextLength() > width) {
        line = line.slice(0, -2) + "\u2026";
        t.textContent = line;
      }
      return line;
    });
  }

  function badge(g, text) {
    let t = g.querySelector("text.fw-badge");
    if (!text) { if (t) t.remove(); return; }
    const shape = g.querySelector("path, polygon");
    let frame = null;
    try { frame = shape ? shape.getBBox() : null; } catch (e) { frame = null; }
    if (!frame || frame.width === 0) {  // not laid out yet: place it once the browser has drawn it
      requestAnimationFrame(() => { if (g.isConnected) badge(g, text); });
      return;
    }
    if (!t) {
      t = document.createElementNS(SVG_NS, "text");
      t.setAttribute("class", "fw-badge");
      t.setAttribute("text-anchor", "middle");
      t.setAttribute("font-size", String(BADGE_FONT));
      g.appendChild(t);
    }
    t.textContent = "";
    const room = Math.max(1, model.get("badge_lines"));
    let rows = lines(t, text.split(" \u00b7 "), frame.width - 2 * BADGE_PAD);
    if (rows.length > room) {  // more than the band holds: the rest is in the tooltip
      rows = rows.slice(0, room);
      rows[room - 1] = rows[room - 1].length > 2 ? rows[room - 1].slice(0, -1) + "\u2026" : "\u2026";
    }
    t.textContent = "";
    const x = frame.x + frame.width / 2;
    const last = frame.y + frame.height - BADGE_PAD - 2;  // the last line's baseline
    rows.forEach((row, k) => {
      const span = document.createElementNS(SVG_NS, "tspan");
      span.setAttribute("x", String(x));
      span.setAttribute("y", String(last - (rows.length - 1 - k) * BADGE_LINE));
      span.textContent = row;
      t.appendChild(span);
    });
    const tip = document.createElementNS(SVG_NS, "title");
    tip.textContent = text;
    t.appendChild(tip);
  }

  function decorate() {
    const operators = model.get("operators");
    const selected = model.get("selected");
    const highlighted = model.get("highlighted");
    const states = model.get("states");
    for (const [id, g] of Object.entries(nodes)) {
      const name = operators[id];
      const state = states[name];
      g.classList.toggle("fw-selected", name === selected);
      g.classList.toggle("fw-highlighted", name in highlighted);
      g.setAttribute("aria-pressed", name === selected ? "true" : "false");
      for (const s of STATES) g.classList.toggle("fw-state-" + s, !!state && state.state === s);
      const parts = [];
      if (name in highlighted) parts.push(highlighted[name]);
      if (state) parts.push(state.text);
      badge(g, parts.join(" \u00b7 "));
    }
    el.dataset.highlighted = String(Object.keys(highlighted).length);
  }

  // Shown late (a hidden panel, a collapsed output) or the cell resized: fit the width again,
  // unless the reader has chosen a view. The box keeps a gutter for its scrollbar, so the
  // width does not change when the scrollbar comes and goes.
  const observer = new ResizeObserver(() => {
    if (!touched && box.clientWidth && Math.abs(box.clientWidth - width) > 1) defaultView();
  });
  observer.observe(box);

  model.on("change:svg", draw);
  model.on("change:operators", draw);
  model.on("change:badge_lines", decorate);
  model.on("change:selected", decorate);
  model.on("change:highlighted", decorate);
  model.on("change:states", decorate);
  draw();
  return () => { observer.disconnect(); nodes = {}; svg = null; };
}

export default { render };
