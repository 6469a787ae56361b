// A model page's live figures: read GET /v1/models/{id} (through
// /console/api) every few seconds and redraw its status and figures. The
// page shows the figures of its load without JavaScript.
const stats = document.getElementById("model-stats");
const status = document.getElementById("model-status");
const reason = document.getElementById("model-status-reason");
const live = document.getElementById("model-live");
const id = stats.dataset.model;
const EVERY = 3000;

// label and text write a figure as the page's server does (console.go's
// label, more.go's cell): words for names, durations for milliseconds.
function label(k) {
  const words = k.replace(/_ms$/, "").split("_").map((w) => (["ttft", "tpot", "kv", "id", "p50", "p95", "p99"].includes(w) ? w.toUpperCase() : w === "tps" ? "tokens/s" : w));
  const s = words.join(" ");
  return s ? s[0].toUpperCase() + s.slice(1) : k;
}

function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

function text(k, v) {
  if (v === null || v === undefined || v === "") return "—";
  if (typeof v === "number" && k.endsWith("_ms")) return duration(v);
  if (typeof v === "number" && (k.endsWith("_at") || k === "created")) {
    return v === 0 ? "—" : new Date(v * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function draw(m) {
  status.textContent = m.status;
  reason.textContent = m.status_reason || "";
  const rows = [];
  const keys = Object.keys(m.stats || {}).sort();
  for (const k of keys) {
    const dt = document.createElement("dt");
    dt.textContent = label(k);
    const dd = document.createElement("dd");
    dd.textContent = text(k, m.stats[k]);
    rows.push(dt, dd);
  }
  if (!keys.length) {
    const dt = document.createElement("dt");
    dt.textContent = "Figures";
    const dd = document.createElement("dd");
    dd.textContent = "none yet";
    rows.push(dt, dd);
  }
  stats.replaceChildren(...rows);
}

let timer = null, busy = false;
async function tick() {
  timer = null;
  busy = true;
  try {
    const res = await fetch(`/console/api/models/${encodeURIComponent(id)}`, { credentials: "same-origin" });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    draw(await res.json());
    live.textContent = `Live: updated ${new Date().toLocaleTimeString()}, every ${EVERY / 1000} s.`;
    stats.dataset.updates = String(Number(stats.dataset.updates || 0) + 1);
  } catch (e) {
    live.textContent = `Live updates paused: ${e.message}`;
  }
  busy = false;
  if (!document.hidden) timer = setTimeout(tick, EVERY);
}

document.addEventListener("visibilitychange", () => {
  if (!document.hidden && timer === null && !busy) tick();
});
tick();
