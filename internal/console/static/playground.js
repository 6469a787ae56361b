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

// The built-in example tool set, and the custom set's starting text.
const EXAMPLE_TOOLS = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string", description: "The city, e.g. Paris" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["city"],
      additionalProperties: false,
    },
  },
}];
const toolsJSON = form.elements.tools_json;
if (!toolsJSON.value.trim()) toolsJSON.value = JSON.stringify(EXAMPLE_TOOLS, null, 2);

// tools returns the tools to send ([] when off), or throws when the
// custom JSON is not an array of tools.
function tools() {
  if (!form.elements.tools_on.checked || form.elements.citations.checked) return [];
  if (form.elements.toolset.value === "example") return EXAMPLE_TOOLS;
  let t;
  try {
    t = JSON.parse(toolsJSON.value);
  } catch (e) {
    throw new Error(`The tools are not JSON: ${e.message}`);
  }
  if (!Array.isArray(t) || t.length === 0) throw new Error("The tools are a JSON array of at least one tool.");
  return t;
}

// showToolCalls renders the answer's tool calls under its text, each with
// a form to send the tool's result back.
// pending are the tool calls not answered yet, by id: a new message drops
// them from the history (the API refuses a tool call left unanswered).
const pending = new Map();
function dropUnanswered() {
  if (!pending.size) return;
  for (const m of history) {
    if (!m.tool_calls) continue;
    m.tool_calls = m.tool_calls.filter((c) => !pending.has(c.id));
    if (!m.tool_calls.length) {
      delete m.tool_calls;
      m.content ??= "";
    }
  }
  for (const f of pending.values()) f.remove();
  pending.clear();
}

function showToolCalls(out, calls) {
  for (const c of calls) {
    const box = document.createElement("div");
    box.className = "toolcall";
    const head = document.createElement("div");
    const fn = document.createElement("span");
    fn.className = "fn";
    fn.textContent = `Tool call: ${c.function.name}`;
    const id = document.createElement("code");
    id.className = "small";
    id.textContent = c.id;
    head.append(fn, " ", id);
    const args = document.createElement("pre");
    args.className = "mono small output";
    args.textContent = prettyJSON(c.function.arguments);
    const f = document.createElement("form");
    f.className = "row";
    const label = document.createElement("label");
    const inputID = `tr-${c.id}`;
    label.htmlFor = inputID;
    label.textContent = `Result of ${c.function.name}`;
    const input = document.createElement("input");
    input.id = inputID;
    input.required = true;
    input.placeholder = '{"temperature": 18}';
    const b = document.createElement("button");
    b.type = "submit";
    b.className = "small";
    b.textContent = "Send result";
    f.append(label, input, b);
    f.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (controller) return;
      history.push({ role: "tool", tool_call_id: c.id, content: input.value });
      add("tool", `${c.function.name} → ${input.value}`);
      f.remove();
      pending.delete(c.id);
      // Every call of the turn answered: the model goes on.
      if (!pending.size) ask();
    });
    pending.set(c.id, f);
    box.append(head, args, f);
    out.parentElement.append(box);
  }
}

function prettyJSON(s) {
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch {
    return s;
  }
}

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
  pending.clear();
  history.length = 0;
  conv.replaceChildren();
  stats.textContent = "";
  sourceList.replaceChildren();
  sourcesBox.hidden = true;
});
stop.addEventListener("click", () => controller?.abort());

form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const prompt = form.elements.prompt.value.trim();
  if (!prompt || controller) return;
  dropUnanswered();
  add("user", prompt);
  history.push({ role: "user", content: prompt });
  form.elements.prompt.value = "";
  ask();
});

// ask streams the model's answer to the conversation so far.
async function ask() {
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
  let citations = null, toolList = [];
  const calls = [];
  controller = new AbortController();
  send.disabled = true;
  stop.disabled = false;
  const start = performance.now();
  let first = 0, text = "", usage = null;
  try {
    toolList = tools();
    if (toolList.length) {
      body.tools = toolList;
      body.tool_choice = form.elements.tool_choice.value;
      body.parallel_tool_calls = form.elements.parallel_tool_calls.checked;
    }
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
          for (const tc of chunk.choices?.[0]?.delta?.tool_calls || []) {
            const i = tc.index ?? calls.length;
            calls[i] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
            if (tc.id) calls[i].id = tc.id;
            if (tc.function?.name) calls[i].function.name += tc.function.name;
            if (tc.function?.arguments) calls[i].function.arguments += tc.function.arguments;
            if (!first) first = performance.now();
          }
          const delta = chunk.choices?.[0]?.delta?.content;
          if (delta) {
            if (!first) first = performance.now();
            text += delta;
            out.textContent = text;
          }
        }
      }
    }
    const made = calls.filter(Boolean);
    if (made.length) {
      history.push({ role: "assistant", content: text || null, tool_calls: made });
      showToolCalls(out, made);
    } else {
      history.push({ role: "assistant", content: text });
    }
    if (cite) showCitations(out, text, citations || []);
    const secs = (performance.now() - start) / 1000;
    let s = `${secs.toFixed(2)} s`;
    if (first) s += ` · first token after ${((first - start) / 1000).toFixed(2)} s`;
    if (usage) s += ` · ${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion tokens`;
    // Tokens per second over the streaming time (over the whole answer
    // when it came in one piece, as a tool call does).
    const gen = first ? (performance.now() - first) / 1000 : 0;
    if (usage && first && secs > 0) s += ` · ${(usage.completion_tokens / (gen > 0.05 ? gen : secs)).toFixed(1)} tok/s`;
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
}
