// The job-graph canvas: Graphviz's SVG (laid out in Python), made clickable.
// Python owns all logic; this file only draws what the model says:
//   svg         the drawing;  operators  {svg node id: operator name}
//   selected    the operator clicked (written here, read in Python)
//   highlighted {operator: badge text}  (the what-if restart set)
//   states      {operator: {state, text}}  (live run or replayed log)
// No network: nothing is fetched, everything ships in the package.

const SVG_NS = "http://www.w3.org/2000/svg";
const STATES = ["pending", "running", "finished", "failed", "recovered"];

function render({ model, el }) {
  el.classList.add("fw-graph");
  const box = document.createElement("div");
  box.className = "fw-graph-svg";
  el.appendChild(box);
  let nodes = {};

  function select(id) {
    model.set("selected", model.get("operators")[id]);
    model.save_changes();
  }

  function draw() {
    box.innerHTML = model.get("svg");
    fit();
    nodes = {};
    const operators = model.get("operators");
    for (const g of box.querySelectorAll("g.node")) {
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
    decorate();
  }

  // Shrink a drawing up to 2.5 times wider than the cell to fit it; scroll a bigger one.
  function fit() {
    const svg = box.querySelector("svg");
    if (!svg) return;
    const width = parseFloat(svg.getAttribute("width")) || 0;  // Graphviz writes "612pt"
    const room = box.clientWidth;
    if (!room) { requestAnimationFrame(() => { if (box.isConnected) fit(); }); return; }
    svg.style.maxWidth = width * 4 / 3 <= room * 2.5 ? "100%" : "none";
  }

  function badge(g, text) {
    let t = g.querySelector("text.fw-badge");
    if (!text) { if (t) t.remove(); return; }
    if (!t) {
      t = document.createElementNS(SVG_NS, "text");
      t.setAttribute("class", "fw-badge");
      t.setAttribute("text-anchor", "middle");
      g.appendChild(t);
    }
    t.textContent = text;
    const shape = g.querySelector("path, polygon");
    let box = null;
    try { box = shape ? shape.getBBox() : null; } catch (e) { box = null; }
    if (!box || box.width === 0) {  // not laid out yet: place it once the browser has drawn it
      requestAnimationFrame(() => { if (g.isConnected) badge(g, text); });
      return;
    }
    t.setAttribute("x", box.x + box.width / 2);
    t.setAttribute("y", box.y + box.height + 12);
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
      badge(g, parts.join(" · "));
    }
    el.dataset.highlighted = String(Object.keys(highlighted).length);
  }

  model.on("change:svg", draw);
  model.on("change:operators", draw);
  model.on("change:selected", decorate);
  model.on("change:highlighted", decorate);
  model.on("change:states", decorate);
  draw();
  return () => { nodes = {}; };
}

export default { render };
