// The chat playground: POST /console/api/chat/completions (the API's
// /v1/chat/completions, as the session's key) with stream: true, reading
// the server-sent events as they arrive and appending each delta.
const form = document.getElementById("chat-form");
const conv = document.getElementById("conversation");
const stats = document.getElementById("p-stats");
const send = document.getElementById("p-send");
const stop = document.getElementById("p-stop");
const csrf = form.dataset.csrf;
const history = [];
let controller = null;

function add(role, text) {
  const li = document.createElement("li");
  li.className = role;
  const r = document.createElement("div");
  r.className = "role";
  r.textContent = role;
  const t = document.createElement("div");
  t.className = "text";
  t.textContent = text;
  li.append(r, t);
  conv.append(li);
  return t;
}

function num(name) {
  const v = form.elements[name].value;
  return v === "" ? undefined : Number(v);
}

// showCitations links each [n] of the answer to its source, listed beside
// the answer with its snippet.
const sourcesBox = document.getElementById("p-sources");
const sourceList = document.getElementById("p-source-list");
let turn = 0;
function showCitations(out, text, citations) {
  turn++;
  const sources = new Map();
  for (const c of citations) for (const s of c.sources || []) if (!sources.has(s.number)) sources.set(s.number, s);
  out.replaceChildren();
  let last = 0;
  for (const m of text.matchAll(/\[(\d+)\]/g)) {
    out.append(text.slice(last, m.index));
    const n = Number(m[1]);
    if (sources.has(n)) {
      const a = document.createElement("a");
      a.href = `#src-${turn}-${n}`;
      a.textContent = m[0];
      a.className = "cite";
      a.setAttribute("aria-label", `source ${n}: ${sources.get(n).title || "untitled"}`);
      out.append(a);
    } else {
      out.append(m[0]);
    }
    last = m.index + m[0].length;
  }
  out.append(text.slice(last));
  sourceList.replaceChildren();
  for (const [n, s] of [...sources.entries()].sort((a, b) => a[0] - b[0])) {
    const li = document.createElement("li");
    li.id = `src-${turn}-${n}`;
    li.value = n;
    li.tabIndex = -1;
    const t = document.createElement("strong");
    t.textContent = s.title || s.document_id || "untitled";
    const snip = document.createElement("div");
    snip.className = "snippet";
    snip.textContent = s.snippet || "";
    li.append(t, snip);
    sourceList.append(li);
  }
  sourcesBox.hidden = sources.size === 0;
}

document.getElementById("p-clear").addEventListener("click", () => {
  history.length = 0;
  conv.replaceChildren();
  stats.textContent = "";
  sourceList.replaceChildren();
  sourcesBox.hidden = true;
});
stop.addEventListener("click", () => controller?.abort());

form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const prompt = form.elements.prompt.value.trim();
  if (!prompt) return;
  add("user", prompt);
  history.push({ role: "user", content: prompt });
  form.elements.prompt.value = "";
  const out = add("assistant", "");
  out.parentElement.setAttribute("aria-busy", "true");
  const messages = [];
  const sys = form.elements.system.value.trim();
  if (sys) messages.push({ role: "system", content: sys });
  messages.push(...history);
  const body = {
    model: form.elements.model.value, messages, stream: true,
    stream_options: { include_usage: true },
    temperature: num("temperature"), top_p: num("top_p"), max_tokens: num("max_tokens"), seed: num("seed"),
  };
  // With citations the answer comes from POST /v1/completions in the
  // spec's form (messages + citations + sources): chat chunks, then one
  // chunk carrying the citations.
  const cite = form.elements.citations.checked;
  let endpoint = "chat/completions";
  if (cite) {
    endpoint = "completions";
    body.citations = true;
    const col = form.elements.collection.value;
    if (col) body.sources = { collections: [col] };
  }
  let citations = null;
  controller = new AbortController();
  send.disabled = true;
  stop.disabled = false;
  const start = performance.now();
  let first = 0, text = "", usage = null;
  try {
    const res = await fetch(`/console/api/${endpoint}`, {
      method: "POST", signal: controller.signal, credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
    if (!res.ok) {
      const e = await res.json().catch(() => ({}));
      throw new Error(e?.error?.message || `HTTP ${res.status}`);
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, i);
        buf = buf.slice(i + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data:")) continue;
          const data = line.slice(5).trim();
          if (data === "[DONE]") continue;
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message);
          if (chunk.usage) usage = chunk.usage;
          if (chunk.citations) citations = chunk.citations;
          const delta = chunk.choices?.[0]?.delta?.content;
          if (delta) {
            if (!first) first = performance.now();
            text += delta;
            out.textContent = text;
          }
        }
      }
    }
    history.push({ role: "assistant", content: text });
    if (cite) showCitations(out, text, citations || []);
    const secs = (performance.now() - start) / 1000;
    let s = `${secs.toFixed(2)} s`;
    if (first) s += ` · first token after ${((first - start) / 1000).toFixed(2)} s`;
    if (usage) s += ` · ${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion tokens`;
    if (usage && first && secs > 0) s += ` · ${(usage.completion_tokens / ((performance.now() - first) / 1000 || 1)).toFixed(1)} tok/s`;
    stats.textContent = s;
  } catch (e) {
    if (e.name === "AbortError") {
      history.push({ role: "assistant", content: text });
      stats.textContent = "Stopped.";
    } else {
      const err = add("error", e.message);
      err.parentElement.setAttribute("role", "alert");
      history.pop();
    }
  } finally {
    out.parentElement.removeAttribute("aria-busy");
    send.disabled = false;
    stop.disabled = true;
    controller = null;
  }
});
