// Browser tests of the web console against a live server (test.sh starts
// it): playwright-core driving Debian's chromium headless, axe-core on every
// page (no serious or critical violation), a screenshot of every page in
// CONSOLE_OUT. The tests run in order and share one signed-in browser.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const BASE = process.env.CONSOLE_URL;
const ADMIN = process.env.CONSOLE_ADMIN_KEY;
const OUT = process.env.CONSOLE_OUT || "out";
const CHAT_MODEL = process.env.CONSOLE_CHAT_MODEL || "gemma3-270m";
assert.ok(BASE && ADMIN, "CONSOLE_URL and CONSOLE_ADMIN_KEY must be set (run test.sh)");

let browser, context, page;
const pageErrors = [];
const shots = [];

before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: BASE });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  // Any script error or CSP violation on a page fails the suite.
  page.on("pageerror", (e) => pageErrors.push(`${page.url()}: ${e.message}`));
  // (A page answered with an error status logs "Failed to load resource";
  // that is the page's status, asserted where it matters. A failed
  // sub-resource is caught by the response handler.)
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) pageErrors.push(`${page.url()}: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.request().resourceType() !== "document" && r.request().resourceType() !== "fetch" && r.status() >= 400) {
      pageErrors.push(`${r.url()}: ${r.status()}`);
    }
  });
});

after(async () => {
  await browser?.close();
});

// check screenshots the page (p: another than the suite's) and runs
// axe-core on it.
async function check(name, p = page) {
  await p.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
  shots.push(name);
  await p.evaluate(AXE);
  const res = await p.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(
    bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`),
    [],
    `axe-core violations on ${name}`,
  );
  const errs = pageErrors.splice(0);
  assert.deepEqual(errs, [], `script errors on ${name}`);
}

async function api(key, method, p, body) {
  const res = await fetch(BASE + p, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

test("signed out, a page leads to sign-in", async () => {
  await page.goto("/console/keys");
  assert.match(new URL(page.url()).pathname, /\/console\/signin$/);
  await check("signin");
});

test("people sign in with a password; the API-key form is off by default", async () => {
  assert.equal(await page.getByLabel("API key").count(), 0, "the break-glass key form is shown");
  const me = await api(ADMIN, "GET", "/v1/me");
  assert.equal(me.status, 200);
  const made = await api(ADMIN, "POST", "/v1/users", {
    email: "operator@example.com", name: "Olga Operator", password: "a long console password", instance_admin: true,
    memberships: [{ team_id: me.body.key.team_id, role: "owner" }],
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  await page.getByLabel("E-mail address").fill("operator@example.com");
  await page.getByLabel("Password").fill("not the password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("Incorrect e-mail address or password").waitFor();
  await check("signin-refused");
});

test("single sign-on through the identity provider's login page; groups make the team and role, and removing the group removes the access", async () => {
  const ctl = process.env.IDP_CONTROL;
  assert.ok(ctl, "IDP_CONTROL must be set (run test.sh)");
  const control = async (what, body) => {
    const res = await fetch(`${ctl}/_ctl/${what}`, { method: "POST", body: JSON.stringify(body) });
    assert.equal(res.status, 204, `${what}: ${await res.text()}`);
  };
  await control("client", { id: "sovereign-console", redirect_uris: [`${BASE}/console/sso/testidp/callback`], post_logout_redirect_uris: [`${BASE}/console/signin?notice=Signed+out.`] });
  await control("person", { login: "lin", Password: "lin-at-the-idp", Email: "lin@example.com", Name: "Lin Sso", Groups: ["console-testers"] });
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: BASE });
  const sso = await ctx.newPage();
  sso.setDefaultTimeout(30_000);
  sso.on("pageerror", (e) => pageErrors.push(`${sso.url()}: ${e.message}`));
  try {
    await sso.goto("/console/signin");
    await check("signin-sso", sso);
    await sso.getByRole("link", { name: "Sign in with Test IdP" }).click();
    await sso.getByRole("heading", { name: "Test identity provider" }).waitFor();
    await sso.getByLabel("Login").fill("lin");
    await sso.getByLabel("Password").fill("lin-at-the-idp");
    await sso.getByRole("button", { name: "Sign in at the provider" }).click();
    await sso.waitForURL(/\/console\/$/);
    await sso.locator("header .person", { hasText: "Lin Sso" }).waitFor();
    await sso.locator("header .team", { hasText: "sso testers (developer)" }).waitFor();
    await check("sso-signed-in", sso);
    // Out of the group at the provider; signed out (at the provider too);
    // signing in again finds no team.
    await control("person", { login: "lin", Password: "lin-at-the-idp", Email: "lin@example.com", Name: "Lin Sso", Groups: [] });
    await sso.getByRole("button", { name: "Sign out" }).click();
    await sso.waitForURL(/\/console\/signin/).catch(async (e) => {
      throw new Error(`sign-out ended at ${sso.url()}: ${(await sso.content()).slice(0, 1500)}`, { cause: e });
    });
    await sso.getByText("Signed out.").waitFor();
    await sso.getByRole("link", { name: "Sign in with Test IdP" }).click();
    await sso.getByLabel("Login").fill("lin");
    await sso.getByLabel("Password").fill("lin-at-the-idp");
    await sso.getByRole("button", { name: "Sign in at the provider" }).click();
    await sso.getByText("none of your groups gives you a team").waitFor();
    await check("sso-no-team", sso);
  } finally {
    await ctx.close();
  }
  const users = await api(ADMIN, "GET", "/v1/users");
  const lin = users.body.data.find((u) => u.email === "lin@example.com");
  assert.ok(lin, "the user made at first sign-in");
  assert.deepEqual(lin.memberships, [], "the membership left with the group");
});

test("an invitation link: join the team with a password, at phone width too", async () => {
  const me = await api(ADMIN, "GET", "/v1/me");
  const inv = await api(ADMIN, "POST", "/v1/invitations", { email: "invitee@example.com", team_id: me.body.key.team_id, role: "viewer" });
  assert.equal(inv.status, 201, JSON.stringify(inv.body));
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, baseURL: BASE });
  const p = await ctx.newPage();
  p.on("pageerror", (e) => pageErrors.push(`${p.url()}: ${e.message}`));
  try {
    await p.goto(new URL(inv.body.url).pathname);
    await p.getByRole("heading", { name: /^Join / }).waitFor();
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `the invitation page scrolls sideways at phone width (${overflow}px)`);
    await check("phone-invite", p);
    await p.getByLabel("Your name").fill("Ivy Invitee");
    await p.getByLabel("Choose a password").fill("an invited person's password");
    await p.getByLabel("The password again").fill("an invited person's password");
    await p.getByRole("button", { name: "Accept the invitation" }).click();
    await p.waitForURL(/\/console\/$/).catch(async (e) => {
      throw new Error(`accepting ended at ${p.url()}: ${(await p.content()).slice(0, 3000)}`, { cause: e });
    });
    await p.getByRole("heading", { name: "Your teams" }).waitFor();
    await check("phone-invited-overview", p);
  } finally {
    await ctx.close();
  }
});

test("sign in as a person; the session cookie's flags", async () => {
  await page.getByLabel("E-mail address").fill("operator@example.com");
  await page.getByLabel("Password").fill("a long console password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/console\/keys$/);
  const cookie = (await context.cookies()).find((c) => c.name === "sovereign_console");
  assert.ok(cookie, "session cookie set");
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, "Strict");
  assert.equal(cookie.path, "/console");
  assert.equal(cookie.secure, false, "plain HTTP on loopback: not Secure");
  await page.goto("/console/");
  await assert.doesNotReject(page.getByRole("heading", { name: "Overview" }).waitFor());
  await page.locator("header .person", { hasText: "Olga Operator" }).waitFor();
  await check("overview");
});

let newKey;
test("create a key: its secret is shown once and works against the API", async () => {
  await page.goto("/console/keys");
  await check("keys");
  const details = page.locator("details.card");
  if (!(await details.getAttribute("open") !== null)) await page.getByText("Create a key").click();
  await page.getByLabel("Name").fill("browser test key");
  await page.getByLabel("inference").check();
  await page.getByLabel("models:read").check();
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByRole("heading", { name: "Key created" }).waitFor();
  newKey = await page.locator("#new-secret").inputValue();
  assert.match(newKey, /^sk-sov-[A-Za-z0-9]{40,}$/);
  await assert.doesNotReject(page.getByRole("button", { name: "Copy" }).waitFor());
  await check("key-created");
  const models = await api(newKey, "GET", "/v1/models");
  assert.equal(models.status, 200);
  assert.ok(models.body.data.some((m) => m.id === CHAT_MODEL));
  const keys = await api(newKey, "GET", "/v1/keys");
  assert.equal(keys.status, 403, "the new key has only the scopes chosen");
  // Shown once: the list never shows it again.
  await page.goto("/console/keys");
  assert.equal((await page.content()).includes(newKey), false);
  assert.ok(await page.getByText("browser test key").first().isVisible());
});

test("a form post without the CSRF token is refused", async () => {
  const res = await page.request.post("/console/keys", { form: { name: "forged", scopes: "admin" }, maxRedirects: 0 });
  assert.equal(res.status(), 403);
  const js = await page.request.post("/console/api/teams", { data: { name: "forged" } });
  assert.equal(js.status(), 403);
});

test("the playground streams a chat answer", async () => {
  await page.goto("/console/playground");
  await page.getByLabel("Model").selectOption(CHAT_MODEL);
  await page.getByLabel("Max tokens").fill("48");
  await page.getByLabel("Temperature").fill("0");
  await page.getByLabel("Message", { exact: true }).fill("Count from one to twenty, in words.");
  // Count the updates of the answer: streamed text arrives in pieces. A
  // long answer (the model fills all 48 tokens), so that the pieces are
  // apart in time: a one-line answer of 8 tokens is over in a fraction of
  // a second, and a browser busy for that long reads it all at once (seen
  // once in CI: 2 updates).
  await page.evaluate(() => {
    window.__updates = 0;
    new MutationObserver(() => { window.__updates++; }).observe(document.getElementById("conversation"), { subtree: true, childList: true, characterData: true });
  });
  await page.getByRole("button", { name: "Send" }).click();
  const answer = page.locator("#conversation li.assistant .text");
  await page.waitForFunction(() => /tokens/.test(document.getElementById("p-stats").textContent), null, { timeout: 120_000 });
  const text = await answer.textContent();
  assert.ok(text.trim().length > 0, "the answer has text");
  const updates = await page.evaluate(() => window.__updates);
  assert.ok(updates > 3, `the answer arrived in pieces (${updates} updates)`);
  await check("playground");
});

test("models: catalog with filters and a model page", async () => {
  await page.goto("/console/models");
  await check("models");
  await page.getByLabel("Capability").selectOption("chat");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.waitForURL(/capability=chat/);
  await page.getByRole("link", { name: CHAT_MODEL }).click();
  await page.getByRole("heading", { name: CHAT_MODEL }).waitFor();
  await check("model");
});

test("compare models side by side", async () => {
  await page.goto("/console/compare");
  await check("compare");
  await page.getByLabel("Prompt").fill("Say hello.");
  await page.getByLabel("Max tokens").fill("12");
  await page.getByRole("button", { name: "Compare" }).click();
  await page.locator(".compare-cols section, p.error").first().waitFor({ timeout: 120_000 });
  assert.equal(await page.locator("p.error").count(), 0, await page.locator("main").textContent());
  assert.match(await page.locator(".compare-cols").textContent(), /Latency/);
  await check("compare-results");
});

test("the chat request is in the request logs, with its detail", async () => {
  await page.goto("/console/logs?route=" + encodeURIComponent("POST /v1/chat/completions"));
  const link = page.locator("table tbody a").first();
  await link.waitFor({ timeout: 5000 }).catch(async () => {
    await page.screenshot({ path: path.join(OUT, "logs-failed.png"), fullPage: true });
    assert.fail("no request in the logs page: " + (await page.locator("main").textContent()));
  });
  await check("logs");
  await link.click();
  await page.getByRole("heading", { name: "Audit chain" }).waitFor();
  assert.match(await page.locator("main").textContent(), /chat\/completions/);
  await check("log");
});

test("records, sources, workflows and webhooks pages", async () => {
  for (const [name, p] of [["usage", "/console/usage?group_by=model"], ["decisions", "/console/decisions"], ["audit", "/console/audit"],
    ["sources", "/console/sources"], ["source-links", "/console/source_links"], ["workflows", "/console/workflows"],
    ["runs", "/console/runs"], ["webhooks", "/console/webhooks"]]) {
    const res = await page.goto(p);
    assert.equal(res.status(), 200, p);
    await check(name);
  }
  assert.match(await page.goto("/console/usage?group_by=model").then(() => page.locator("main").textContent()), new RegExp(CHAT_MODEL));
});

test("sources: create a collection, upload a document, search it", async () => {
  await page.goto("/console/sources");
  await page.getByLabel("New collection").fill("console notes");
  await page.getByRole("button", { name: "Create collection" }).click();
  await page.waitForURL(/\/console\/sources\/col_/);
  // A file through the upload form (progress bar), and a text document.
  await page.getByLabel(/^File/).setInputFiles({ name: "zorblat.txt", mimeType: "text/plain",
    buffer: Buffer.from("The zorblat engine runs on liquid moonlight and hums in B flat.\n") });
  await page.getByRole("button", { name: "Upload" }).click();
  await page.getByText(/zorblat.txt uploaded/).waitFor();
  await page.waitForLoadState("load");
  await page.getByLabel("Title", { exact: true }).fill("Kettles");
  await page.getByLabel("Text", { exact: true }).fill("A kettle boils water for tea.");
  await page.getByRole("button", { name: "Add text" }).click();
  await page.getByText(/Document added/).waitFor();
  for (let i = 0; i < 60; i++) {
    const text = await page.locator("main table").textContent();
    if ((text.match(/ready/g) || []).length >= 2) break;
    await new Promise((r) => setTimeout(r, 500));
    await page.reload();
  }
  await check("collection");
  await page.getByLabel("Query").fill("What does the zorblat engine run on?");
  await page.getByLabel("Mode").selectOption("hybrid");
  await page.getByRole("button", { name: "Search" }).click();
  await page.locator("ol.results li").first().waitFor();
  assert.match(await page.locator("ol.results li").first().textContent(), /moonlight/);
  await check("collection-search");
});

test("playground: ask with citations and open a cited snippet", async () => {
  await page.goto("/console/playground");
  await page.getByLabel("Model").selectOption(CHAT_MODEL);
  await page.getByLabel("Max tokens").fill("32");
  await page.getByLabel("Temperature").fill("0");
  await page.getByLabel(/with citations/).check();
  await page.getByLabel("Collection").selectOption({ label: "console notes" });
  await page.getByLabel("Message", { exact: true }).fill("What does the zorblat engine run on?");
  await page.getByRole("button", { name: "Send" }).click();
  await page.waitForFunction(() => /tokens/.test(document.getElementById("p-stats").textContent), null, { timeout: 120_000 });
  const answer = await page.locator("#conversation li.assistant .text").last().textContent();
  const cite = page.locator("#conversation a.cite").first();
  assert.ok(await cite.count() > 0, `the answer has a linked [n] marker: ${answer}`);
  assert.ok(await page.locator("#p-sources").isVisible(), "the sources are shown beside the answer");
  await cite.click();
  const target = await page.evaluate(() => location.hash);
  assert.match(target, /^#src-/);
  assert.match(await page.locator(target).textContent(), /moonlight|zorblat/);
  await check("playground-citations");
  // The answer's citations are source links, each with a detail page.
  await page.goto("/console/source_links");
  await page.getByRole("link", { name: /^Details/ }).first().click();
  await page.waitForURL(/\/console\/source_links\/[^?]+\?response_id=/);
  assert.match(await page.locator("#snippet").textContent(), /moonlight|zorblat|kettle/i);
  await check("source-link");
});

test("approve a pending workflow step", async () => {
  const wf = await api(ADMIN, "POST", "/v1/workflows", {
    name: "console approval test",
    definition: { steps: [{ id: "review", type: "approval", approvers: { scopes: ["approvals"] }, instructions: "Approve the console test" }] },
  });
  assert.equal(wf.status, 201, JSON.stringify(wf.body));
  const run = await api(ADMIN, "POST", `/v1/workflows/${wf.body.id}/runs`, { input: {} });
  assert.ok(run.status === 201 || run.status === 202, JSON.stringify(run.body));
  await page.goto("/console/approvals?status=pending");
  const row = page.locator("tr", { hasText: "Approve the console test" });
  for (let i = 0; i < 50 && (await row.count()) === 0; i++) {
    await new Promise((r) => setTimeout(r, 200));
    await page.reload();
  }
  await check("approvals");
  // The run's page, open in a second tab, follows the run live (SSE).
  const runPage = await context.newPage();
  runPage.on("pageerror", (e) => pageErrors.push(`run page: ${e.message}`));
  await runPage.goto(`/console/runs/${run.body.id}`);
  await runPage.locator('tr[data-step="review"]').getByText("waiting_approval").waitFor();
  await row.getByLabel(/Comment on/).fill("looks right");
  await row.getByRole("button", { name: "Approve" }).click();
  await page.getByText(/approved\./).waitFor();
  let status;
  for (let i = 0; i < 50; i++) {
    status = (await api(ADMIN, "GET", `/v1/workflow_runs/${run.body.id}`)).body.status;
    if (status === "succeeded") break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(status, "succeeded");
  await runPage.locator('tr[data-step="review"]').getByText("succeeded").waitFor({ timeout: 15_000 });
  await runPage.locator('#run [data-field="status"]', { hasText: "succeeded" }).waitFor();
  const p0 = page;
  page = runPage;
  try { await check("run"); } finally { page = p0; await runPage.close(); }
});

test("webhooks: create (secret shown once), edit, rotate the secret, delete", async () => {
  await page.goto("/console/webhooks");
  const add = page.locator("details.card", { hasText: "Add an endpoint" });
  if ((await add.getAttribute("open")) === null) await page.getByText("Add an endpoint").click();
  await page.getByLabel("URL").fill("https://hooks.example.com/console-test");
  await page.getByLabel("Description").fill("browser test hook");
  await page.getByLabel("every event (*)").uncheck();
  await page.getByLabel("document.ready", { exact: true }).check();
  await page.getByLabel("workflow.run.succeeded", { exact: true }).check();
  await page.getByRole("button", { name: "Create webhook" }).click();
  await page.getByRole("heading", { name: "Webhook created" }).waitFor();
  const secret = await page.locator("#new-secret").inputValue();
  assert.match(secret, /^whsec_/);
  await assert.doesNotReject(page.getByRole("button", { name: "Copy" }).waitFor());
  await check("webhook-created");
  const list = await api(ADMIN, "GET", "/v1/webhooks");
  const wh = list.body.data.find((w) => w.url === "https://hooks.example.com/console-test");
  assert.ok(wh, "the webhook exists in the API");
  assert.deepEqual([...wh.events].sort(), ["document.ready", "workflow.run.succeeded"]);
  await page.goto("/console/webhooks");
  assert.equal((await page.content()).includes(secret), false, "the secret is shown once");
  await check("webhooks-list");
  await page.getByRole("link", { name: wh.id }).click();
  await page.getByRole("heading", { name: `Webhook ${wh.id}` }).waitFor();
  assert.equal((await page.content()).includes(secret), false);
  await check("webhook");
  // Edit: another URL, disabled.
  await page.getByLabel("URL").fill("https://hooks.example.com/console-test-v2");
  await page.getByRole("checkbox", { name: /Enabled/ }).uncheck();
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Webhook saved.").waitFor();
  const got = await api(ADMIN, "GET", `/v1/webhooks/${wh.id}`);
  assert.equal(got.body.url, "https://hooks.example.com/console-test-v2");
  assert.equal(got.body.enabled, false);
  // Rotate: a new secret, shown once.
  await page.getByLabel(/keeps signing for/).fill("2");
  await page.getByRole("button", { name: "Rotate secret" }).click();
  await page.getByRole("heading", { name: /Secret rotated/ }).waitFor();
  const rotated = await page.locator("#new-secret").inputValue();
  assert.match(rotated, /^whsec_/);
  assert.notEqual(rotated, secret);
  await check("webhook-rotated");
  // Delete (after the confirmation).
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete webhook" }).click();
  await page.getByText(/deleted\./).waitFor();
  assert.equal((await api(ADMIN, "GET", `/v1/webhooks/${wh.id}`)).status, 404);
});

test("workflows: create from JSON (a refusal names its field), edit, start a run that lands on its live page", async () => {
  await page.goto("/console/workflows");
  const create = page.locator("details.card", { hasText: "Create a workflow" });
  if ((await create.getAttribute("open")) === null) await page.getByText("Create a workflow").click();
  await page.getByLabel("Name").fill("browser greeter");
  await page.getByLabel(/^Definition/).fill('{"steps": [{"id": "greet", "type": "transform", "template": "Hi", "timeout": "1s"}]}');
  await page.getByRole("button", { name: "Create workflow" }).click();
  await page.locator(".field-error").waitFor();
  assert.match(await page.locator(".field-error").textContent(), /definition\.steps\[0\]/);
  assert.equal(await page.getByLabel(/^Definition/).getAttribute("aria-invalid"), "true");
  await check("workflow-refused");
  await page.getByLabel(/^Definition/).fill(JSON.stringify({
    steps: [{ id: "greet", type: "transform", template: "Hello, {{ input.name }}!" }],
    output: { greeting: "{{ steps.greet.output.text }}" },
  }, null, 2));
  await page.getByRole("button", { name: "Create workflow" }).click();
  await page.waitForURL(/\/console\/workflows\/wf_/);
  const wfPage = new URL(page.url()).pathname;
  await page.getByText("Workflow created.").waitFor();
  await check("workflow");
  // Edit (a new version).
  await page.getByLabel("Description").fill("says hello");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText(/Workflow saved/).waitFor();
  assert.match(await page.locator("main").textContent(), /version 2/);
  // Start a run with JSON input: the run's page follows it live.
  await page.getByLabel("Input (JSON)").fill('{"name": "Ada"}');
  await page.getByRole("button", { name: "Start run" }).click();
  await page.waitForURL(/\/console\/runs\/run_/);
  await page.locator('#run [data-field="status"]', { hasText: "succeeded" }).waitFor({ timeout: 15_000 });
  await page.locator('#run [data-field="output"]', { hasText: "Hello, Ada!" }).waitFor({ timeout: 15_000 });
  await check("run-started");
  // Delete it.
  await page.goto(wfPage);
  page.once("dialog", (d) => d.accept());
  await page.getByRole("button", { name: "Delete workflow" }).click();
  await page.getByText(/deleted\./).waitFor();
});

test("records: a policy decision's page and its request, the usage chart, the limits", async () => {
  const pol = await api(ADMIN, "POST", "/v1/policies", {
    name: "console flag", scope: "deployment", enabled: true,
    rules: [{ name: "zebra", stage: "input", when: 'input.contains("zebra")', action: "flag", reason: "mentions a zebra" }],
  });
  assert.equal(pol.status, 201, JSON.stringify(pol.body));
  try {
    const chat = await api(ADMIN, "POST", "/v1/chat/completions", { model: CHAT_MODEL, max_tokens: 2, messages: [{ role: "user", content: "A zebra?" }] });
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
  } finally {
    await api(ADMIN, "DELETE", `/v1/policies/${pol.body.id}`);
  }
  await page.goto("/console/decisions?action=flag");
  const link = page.locator("table tbody a[href^='/console/decisions/pdec_']").first();
  for (let i = 0; i < 25 && (await link.count()) === 0; i++) {
    await new Promise((r) => setTimeout(r, 200));
    await page.reload();
  }
  await link.click();
  await page.getByRole("heading", { name: /Policy decision pdec_/ }).waitFor();
  assert.match(await page.locator("main").textContent(), /mentions a zebra/);
  await check("decision");
  await page.getByRole("link", { name: /in the log/ }).click();
  await page.getByRole("heading", { name: "Audit chain" }).waitFor();
  assert.ok(await page.locator("a[href^='/console/decisions/pdec_']").count() > 0, "the request links its decision");
  await check("log-with-decision");
  await page.goto("/console/usage");
  await page.locator("svg.chart").waitFor();
  assert.equal(await page.locator("svg.chart rect.bar").count(), 30, "one bar a day for 30 days");
  assert.match(await page.locator("main").textContent(), new RegExp(CHAT_MODEL));
  await check("usage-chart");
  await page.getByLabel("Chart", { exact: true }).selectOption("requests");
  await page.getByRole("button", { name: "Show" }).click();
  await page.waitForURL(/metric=requests/);
  await check("usage-requests");
  await page.goto("/console/limits");
  await page.getByRole("heading", { name: "Limits" }).waitFor();
  await check("limits");
});

test("teams: an admin turns a team's capture on and off", async () => {
  const team = await api(ADMIN, "POST", "/v1/teams", { name: "capture team" });
  assert.equal(team.status, 201);
  await page.goto("/console/keys");
  const row = page.locator("tr", { hasText: team.body.id });
  page.once("dialog", (d) => d.accept());
  await row.getByRole("button", { name: /Turn on capture/ }).click();
  await page.getByText("Capture of team capture team is on.").waitFor();
  const teams = await api(ADMIN, "GET", "/v1/teams");
  assert.equal(teams.body.data.find((t) => t.id === team.body.id).capture, true);
  await check("keys-capture");
  await page.locator("tr", { hasText: team.body.id }).getByRole("button", { name: /Turn off capture/ }).click();
  await page.getByText("Capture of team capture team is off.").waitFor();
});

test("playground: tools on, a tool call shown and answered", async () => {
  await page.goto("/console/playground");
  await page.getByLabel("Model").selectOption(CHAT_MODEL);
  await page.getByLabel("Max tokens").fill("64");
  await page.getByLabel("Temperature").fill("0");
  await page.getByLabel("Tools on").check();
  await page.getByLabel("Tool choice").selectOption("required");
  await page.getByLabel("Message", { exact: true }).fill("What is the weather in Paris?");
  await page.getByRole("button", { name: "Send" }).click();
  const call = page.locator("#conversation .toolcall").first();
  await call.waitFor({ timeout: 120_000 });
  assert.match(await call.textContent(), /get_weather/);
  await check("playground-tools");
  // Answer it: the model goes on from the tool's result.
  await page.getByLabel("Tool choice").selectOption("none");
  await call.getByLabel(/Result of get_weather/).fill('{"temperature": 18, "sky": "clear"}');
  await call.getByRole("button", { name: "Send result" }).click();
  await page.locator("#conversation li.tool").waitFor();
  await page.waitForFunction(() => document.querySelectorAll("#conversation li.assistant").length === 2 &&
    !document.querySelector("#conversation li[aria-busy]"), null, { timeout: 120_000 });
  assert.equal(await page.locator("#conversation li.error").count(), 0, await page.locator("#conversation").textContent());
});

test("the model page's figures refresh by themselves", async () => {
  await page.goto(`/console/models/${CHAT_MODEL}`);
  await page.waitForFunction(() => Number(document.getElementById("model-stats").dataset.updates || 0) >= 2, null, { timeout: 15_000 });
  assert.match(await page.locator("#model-live").textContent(), /Live: updated/);
  await check("model-live");
});

test("revoke the key from the console", async () => {
  await page.goto("/console/keys");
  page.once("dialog", (d) => d.accept());
  const row = page.locator("tr", { hasText: "browser test key" }).first();
  await row.getByRole("button", { name: /Revoke/ }).click();
  await page.getByText(/revoked\./).first().waitFor();
  const res = await api(newKey, "GET", "/v1/models");
  assert.equal(res.status, 401);
});

test("dark mode toggle", async () => {
  await page.goto("/console/keys");
  await page.getByRole("button", { name: "Dark mode" }).click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark");
  await page.reload();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark", "the choice is kept");
  await check("keys-dark");
  await page.goto("/console/playground");
  await check("playground-dark");
  await page.getByRole("button", { name: "Dark mode" }).click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "light");
});

test("phone width", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [name, p] of [["phone-keys", "/console/keys"], ["phone-playground", "/console/playground"], ["phone-models", "/console/models"],
    ["phone-usage", "/console/usage"], ["phone-limits", "/console/limits"], ["phone-webhooks", "/console/webhooks"], ["phone-workflows", "/console/workflows"],
    ["phone-overview", "/console/"], ["phone-logs", "/console/logs"], ["phone-decisions", "/console/decisions"], ["phone-audit", "/console/audit"],
    ["phone-sources", "/console/sources"], ["phone-source-links", "/console/source_links"], ["phone-runs", "/console/runs"],
    ["phone-approvals", "/console/approvals"], ["phone-compare", "/console/compare"], ["phone-security", "/console/security"]]) {
    await page.goto(p);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `${p} scrolls sideways at phone width (${overflow}px)`);
    await check(name);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});

test("sign out ends the session", async () => {
  await page.goto("/console/");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(/\/console\/signin/);
  await page.getByText("Signed out.").waitFor();
  await page.goto("/console/keys");
  assert.match(new URL(page.url()).pathname, /\/console\/signin$/);
  const res = await page.request.get("/console/api/keys");
  assert.equal(res.status(), 401);
});
