// A run's live step states: follow GET /v1/workflow_runs/{id}/events (SSE,
// through /console/api) and, on each event, read the run again and update
// its status and steps in place. The stream ends after the run's last event.
const box = document.getElementById("run");
const id = box.dataset.run;
const live = document.getElementById("run-live");
const text = (v) => (v === null || v === undefined || v === "" ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v));

async function refresh() {
  const res = await fetch(`/console/api/workflow_runs/${encodeURIComponent(id)}`, { credentials: "same-origin" });
  if (!res.ok) return;
  const run = await res.json();
  box.querySelector('[data-field="status"]').textContent = run.status;
  box.querySelector('[data-field="error"]').textContent = text(run.error);
  box.querySelector('[data-field="output"]').textContent = text(run.output);
  if (run.ended_at) box.querySelector('[data-field="ended_at"]').textContent = new Date(run.ended_at * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  for (const s of run.steps || []) {
    const row = document.querySelector(`tr[data-step="${CSS.escape(s.id)}"]`);
    if (!row) continue;
    row.querySelector('[data-f="status"] .badge').textContent = s.status;
    row.querySelector('[data-f="attempts"]').textContent = text(s.attempts);
    row.querySelector('[data-f="duration_ms"]').textContent = text(s.duration_ms);
    row.querySelector('[data-f="output"]').textContent = text(s.error || s.output);
  }
}

async function follow() {
  live.textContent = "live";
  try {
    const res = await fetch(`/console/api/workflow_runs/${encodeURIComponent(id)}/events`, { credentials: "same-origin", headers: { Accept: "text/event-stream" } });
    if (res.status === 204) { await refresh(); live.textContent = ""; return; } // nothing more: the run ended
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i, seen = false;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        if (/^data:/m.test(buf.slice(0, i))) seen = true;
        buf = buf.slice(i + 2);
      }
      if (seen) await refresh();
    }
    await refresh();
    live.textContent = "";
  } catch (e) {
    live.textContent = `live updates stopped: ${e.message}`;
  }
}
follow();
