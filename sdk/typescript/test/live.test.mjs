// @sovereign/sdk against a live `sovereign serve` with the default models.
// Generations stay short (max_tokens <= 32): the suite runs on CPU.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Sovereign, * as S from '@sovereign/sdk';
import { apiKey, baseURL, CHAT_MODEL, EMBED_MODEL, listen, readBody, uniq, until } from './helpers.mjs';

const client = new Sovereign({ baseURL, apiKey, maxRetries: 2, timeout: 300_000 });
const CAPITAL = [{ role: 'user', content: 'What is the capital of France?' }];

describe('client', () => {
  test('is an OpenAI client, configured from SOVEREIGN_* only', async () => {
    assert.ok(client instanceof OpenAI);
    const saved = { ...process.env };
    try {
      process.env.OPENAI_API_KEY = 'sk-openai-should-not-be-used';
      process.env.OPENAI_BASE_URL = 'http://127.0.0.1:9/v1';
      process.env.OPENAI_ORG_ID = 'org-x';
      process.env.OPENAI_CUSTOM_HEADERS = 'X-Leak: yes';
      process.env.SOVEREIGN_API_KEY = apiKey;
      process.env.SOVEREIGN_BASE_URL = baseURL;
      const c = new Sovereign();
      assert.equal(c.baseURL, baseURL);
      assert.equal(c.apiKey, apiKey);
      assert.equal(c.organization, null);
      const models = await c.models.list();
      assert.ok(models.data.length >= 2);
      delete process.env.SOVEREIGN_BASE_URL;
      assert.equal(new Sovereign().baseURL, 'http://127.0.0.1:8080/v1');
      delete process.env.SOVEREIGN_API_KEY;
      assert.throws(() => new Sovereign(), /SOVEREIGN_API_KEY/);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  test('a bad key raises AuthenticationError (an OpenAI.AuthenticationError)', async () => {
    const bad = new Sovereign({ baseURL, apiKey: 'sk-sov-' + 'W'.repeat(40), maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e instanceof S.AuthenticationError && e instanceof OpenAI.AuthenticationError && e.status === 401);
  });

  test('unknown model: ModelNotFoundError (an OpenAI.NotFoundError)', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'no-such-model', messages: CAPITAL, max_tokens: 4 }),
      (e) => e instanceof S.ModelNotFoundError && e instanceof OpenAI.NotFoundError && e.code === 'model_not_found',
    );
  });
});

describe('inference', () => {
  test('chat', async () => {
    const r = await client.chat.completions.create({ model: CHAT_MODEL, messages: CAPITAL, temperature: 0, max_tokens: 32 });
    assert.equal(r.object, 'chat.completion');
    assert.match(r.choices[0].message.content, /Paris/);
  });

  test('chat, streamed', async () => {
    const stream = await client.chat.completions.create({ model: CHAT_MODEL, messages: CAPITAL, temperature: 0, max_tokens: 32, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.match(text, /Paris/);
    assert.ok(usage.completion_tokens > 0);
  });

  test('chat with tools', async () => {
    const r = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'What is the weather in Rome?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } }, required: ['city'], additionalProperties: false } } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
      temperature: 0,
      max_tokens: 32,
    });
    const call = r.choices[0].message.tool_calls[0];
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(call.function.name, 'get_weather');
    assert.ok(['Paris', 'Rome'].includes(JSON.parse(call.function.arguments).city));
  });

  test('completions with citations', async () => {
    const MOON = { id: 'memo-7', title: 'Tarsis memo', text: 'The moon of Tarsis is bright green and smells of mint.' };
    const r = await client.completions.createWithCitations({
      model: CHAT_MODEL, prompt: 'What colour is the moon of Tarsis?', max_tokens: 32, temperature: 0, sources: { documents: [MOON] },
    });
    assert.equal(r.object, 'text_completion');
    const text = r.choices[0].text;
    assert.ok(r.citations.length > 0);
    for (const c of r.citations) assert.equal(text.slice(c.start, c.end), c.text);
    assert.equal(r.citations[0].sources[0].id, 'memo-7');
    // OpenAI's own method still works unchanged
    const plain = await client.completions.create({ model: CHAT_MODEL, prompt: 'The capital of France is', max_tokens: 8, temperature: 0 });
    assert.equal(plain.object, 'text_completion');
  });

  test('responses', async () => {
    const r = await client.responses.create({ model: CHAT_MODEL, instructions: 'Answer in one short sentence.', input: 'What is the capital of France?', max_output_tokens: 24, temperature: 0 });
    assert.match(r.output_text, /Paris/);
  });

  test('embeddings', async () => {
    const r = await client.embeddings.create({ model: EMBED_MODEL, input: ['kitten', 'cat'], encoding_format: 'float' });
    assert.equal(r.data.length, 2);
    assert.equal(r.data[0].embedding.length, 384);
  });

  test('rerank', async () => {
    const r = await client.rerank.create({ model: CHAT_MODEL, query: 'What do cats eat?', documents: ['Cats eat fish and mice.', 'Cars run on petrol.'], top_n: 2 });
    assert.equal(r.results.length, 2);
    assert.equal(r.results[0].index, 0);
  });

  test('tokenize / detokenize', async () => {
    const t = await client.tokenizer.tokenize({ model: CHAT_MODEL, input: 'hello world' });
    assert.ok(t.count > 0 && t.tokens.length === t.count);
    const d = await client.tokenizer.detokenize({ model: CHAT_MODEL, tokens: t.tokens });
    assert.match(d.text, /hello world/);
  });
});

describe('models', () => {
  test('list, retrieve, details and compare', async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes(CHAT_MODEL) && ids.includes(EMBED_MODEL));
    const m = await client.models.retrieve(CHAT_MODEL);
    assert.equal(m.id, CHAT_MODEL);
    const d = await client.models.details(CHAT_MODEL);
    assert.equal(d.backend, 'local');
    assert.ok(d.capabilities.includes('chat'));
    const cmp = await client.models.compare({ models: [CHAT_MODEL, EMBED_MODEL], messages: CAPITAL, max_tokens: 16, temperature: 0 });
    assert.equal(cmp.object, 'model.comparison');
    assert.deepEqual(cmp.results.map((r) => [r.model, r.status]), [[CHAT_MODEL, 'succeeded'], [EMBED_MODEL, 'failed']]);
    assert.match(cmp.results[0].output.content, /Paris/);
    assert.match(cmp.results[1].error.error.message, /does not support chat/);
  });

  test('admin: create, update, use (typed upstream error) and delete an upstream model', async () => {
    const dead = await listen((req, res) => { res.writeHead(500); res.end('{"error":{"message":"boom"}}'); });
    const id = uniq('sdk-upstream');
    try {
      const created = await client.models.create(id, { base_url: `${dead.url}/v1`, capabilities: ['chat'] });
      assert.equal(created.id, id);
      assert.equal(created.backend, 'upstream');
      const updated = await client.models.update(id, { aliases: [`${id}-alias`] });
      assert.deepEqual(updated.aliases, [`${id}-alias`]);
      await assert.rejects(
        client.chat.completions.create({ model: id, messages: CAPITAL, max_tokens: 4 }, { maxRetries: 0 }),
        (e) => e instanceof S.UpstreamError && e instanceof OpenAI.InternalServerError,
      );
    } finally {
      const del = await client.models.delete(id).catch((e) => e);
      await dead.close();
      assert.equal(del.deleted, true);
    }
  });
});

describe('collections, documents, search, source links', () => {
  let col;
  before(async () => {
    col = await client.collections.create({ name: uniq('sdk-col') });
  });
  after(async () => {
    if (col) await client.collections.delete(col.id);
  });

  test('upload with progress, wait until ready, search, answer with citations, source links', async () => {
    const text = 'The zorblat engine runs on purple coolant. It was built in Qarth in 1872.\n'.repeat(40);
    const progress = [];
    const doc = await client.documents.upload(col.id, {
      file: new Blob([text], { type: 'text/plain' }),
      filename: 'zorblat.txt',
      title: 'Zorblat manual',
      metadata: { source: 'sdk-test' },
      onProgress: (loaded, total) => progress.push([loaded, total]),
    });
    assert.match(doc.id, /^doc_/);
    assert.ok(progress.length >= 1);
    const total = progress.at(-1)[1];
    assert.ok(total > text.length);
    assert.deepEqual(progress.at(-1), [total, total]);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i][0] >= progress[i - 1][0]);
    const ready = await client.documents.waitUntilReady(col.id, doc.id, { timeout: 120_000 });
    assert.equal(ready.status, 'ready');
    assert.deepEqual(ready.metadata, { source: 'sdk-test' });
    assert.ok(ready.chunk_count > 0);

    const docs = [];
    for await (const d of client.collections.documents.list(col.id)) docs.push(d.id);
    assert.deepEqual(docs, [doc.id]);

    const hits = await client.collections.search(col.id, { query: 'What coolant does the zorblat engine run on?', top_k: 3 });
    assert.ok(hits.data.length > 0);
    assert.match(hits.data[0].text, /purple coolant/);

    const answer = await client.completions.createWithCitations({
      model: CHAT_MODEL, messages: [{ role: 'user', content: 'What coolant does the zorblat engine run on?' }],
      sources: { collections: [col.id], top_k: 2 }, max_tokens: 32, temperature: 0,
    });
    assert.equal(answer.object, 'chat.completion');
    assert.ok(answer.citations.length > 0, JSON.stringify(answer));
    const links = [];
    for await (const l of client.sourceLinks.list({ response_id: answer.id })) links.push(l);
    assert.ok(links.length > 0);
    assert.equal(links[0].response_id, answer.id);

    // plain-text documents and delete
    const d2 = await client.documents.create(col.id, { title: 'note', text: 'A short note.' });
    assert.equal((await client.documents.delete(col.id, d2.id)).deleted, true);
    await assert.rejects(client.documents.retrieve(col.id, d2.id), S.NotFoundError);
  });
});

describe('workflows, approvals, events and webhooks', () => {
  let receiver;
  const deliveries = [];
  before(async () => {
    receiver = await listen(async (req, res) => {
      const body = await readBody(req);
      deliveries.push({ headers: req.headers, body: body.toString('utf8') });
      res.writeHead(204);
      res.end();
    });
  });
  after(async () => receiver?.close());

  test('a run waits for approval, is approved, and its events replay and resume; the webhook is verified', async () => {
    const hook = await client.webhooks.create({ url: `${receiver.url}/hook`, events: ['workflow.run.succeeded', 'workflow.approval.requested'] });
    assert.match(hook.secret, /^whsec_/);
    const wf = await client.workflows.create({
      name: uniq('sdk-wf'),
      definition: {
        steps: [
          { id: 'draft', type: 'chat', model: CHAT_MODEL, messages: [{ role: 'user', content: '{{ input.question }}' }], max_tokens: 8, temperature: 0 },
          { id: 'review', type: 'approval', approvers: { scopes: ['approvals'] }, instructions: 'Check: {{ input.question }}', timeout: '10m' },
        ],
        output: { answer: '{{ steps.draft.output.text }}', reviewed_by: '{{ steps.review.output.decided_by }}' },
      },
    });
    const found = [];
    for await (const w of client.workflows.list({ limit: 100 })) if (w.id === wf.id) found.push(w);
    assert.equal(found.length, 1);

    // the deployment's stream, filtered, opened before the run
    const live = client.events.stream({ types: ['workflow.run.succeeded'] });
    const liveDone = (async () => {
      for await (const ev of live) if (ev.data.run_id === runId) return ev;
    })();
    let runId;
    await new Promise((r) => setTimeout(r, 300));

    const run = await client.workflows.run(wf.id, { question: 'What is the capital of France?' });
    runId = run.id;
    const events = [];
    let approval;
    for await (const ev of client.runs.events(run.id)) {
      events.push(ev);
      if (ev.type === 'workflow.approval.requested') {
        approval = await client.approvals.retrieve(ev.data.approval_id);
        assert.equal(approval.status, 'pending');
        const pending = [];
        for await (const a of client.approvals.list({ status: 'pending' })) pending.push(a.id);
        assert.ok(pending.includes(approval.id));
        const decided = await client.approvals.approve(approval.id, 'looks right');
        assert.equal(decided.status, 'approved');
      }
    }
    assert.ok(approval, 'no approval was requested');
    assert.equal(events.at(-1).type, 'workflow.run.succeeded');
    const done = await client.runs.wait(run.id);
    assert.equal(done.status, 'succeeded');
    assert.ok(done.output.reviewed_by);

    // replay from the start gives the same events; resuming after the 2nd gives the rest
    const replay = [];
    const s = client.runs.events(run.id);
    for await (const ev of s) replay.push(ev.id);
    assert.deepEqual(replay, events.map((e) => e.id));
    assert.equal(s.lastEventId, events.at(-1).id);
    const resumed = [];
    for await (const ev of client.runs.events(run.id, { lastEventId: events[1].id })) resumed.push(ev.id);
    assert.deepEqual(resumed, events.slice(2).map((e) => e.id));
    // resuming after the last event of a finished run ends at once, with nothing
    const t0 = Date.now();
    const none = [];
    for await (const ev of client.runs.events(run.id, { lastEventId: events.at(-1).id })) none.push(ev);
    assert.deepEqual(none, []);
    assert.ok(Date.now() - t0 < 5000);

    const liveEv = await Promise.race([liveDone, new Promise((_, rej) => setTimeout(() => rej(new Error('no live event')), 30_000))]);
    live.close();
    assert.equal(liveEv.type, 'workflow.run.succeeded');
    // the global stream resumes with lastEventId too
    const back = client.events.stream({ lastEventId: events[0].id, types: ['workflow.run.succeeded'] });
    for await (const ev of back) if (ev.id === liveEv.id) break;
    back.close();

    const runs = [];
    for await (const r of client.runs.list({ workflow_id: wf.id })) runs.push(r.id);
    assert.deepEqual(runs, [run.id]);

    // webhook deliveries, verified with the SDK and with the standardwebhooks package
    const msg = await until(() => deliveries.find((d) => JSON.parse(d.body).type === 'workflow.run.succeeded' && JSON.parse(d.body).data.run_id === run.id), 60_000, 'webhook delivery');
    await client.webhooks.verify(msg.body, msg.headers, hook.secret);
    const ev = await client.webhooks.unwrap(msg.body, msg.headers, hook.secret);
    assert.equal(ev.data.run_id, run.id);
    new StandardWebhook(hook.secret).verify(msg.body, msg.headers);
    await assert.rejects(client.webhooks.verify(msg.body.replace('succeeded', 'failed'), msg.headers, hook.secret), S.WebhookVerificationError);
    await assert.rejects(client.webhooks.verify(msg.body, msg.headers, 'whsec_' + btoa('wrong-secret-wrong-secret')), OpenAI.InvalidWebhookSignatureError);

    const dl = [];
    for await (const d of client.webhooks.deliveries.list(hook.id)) dl.push(d);
    const delivery = dl.find((d) => d.event_id === ev.id);
    assert.ok(delivery);
    assert.equal((await client.webhooks.deliveries.retrieve(hook.id, delivery.id)).id, delivery.id);

    // rotation: during the grace period a redelivery carries two signatures; both secrets verify
    const rotated = await client.webhooks.rotateSecret(hook.id, { grace_period_seconds: 600 });
    assert.notEqual(rotated.secret, hook.secret);
    const before = deliveries.length;
    await client.webhooks.deliveries.redeliver(hook.id, delivery.id);
    const again = await until(() => deliveries.length > before && deliveries.slice(before).find((d) => d.headers['webhook-id'] === msg.headers['webhook-id']), 60_000, 'redelivery');
    assert.equal(again.headers['webhook-signature'].split(' ').length, 2);
    await client.webhooks.verify(again.body, again.headers, rotated.secret);
    await client.webhooks.verify(again.body, again.headers, hook.secret);
    new StandardWebhook(rotated.secret).verify(again.body, again.headers);

    const upd = await client.webhooks.update(hook.id, { enabled: false });
    assert.equal(upd.enabled, false);
    assert.equal((await client.webhooks.delete(hook.id)).deleted, true);
    assert.equal((await client.workflows.delete(wf.id)).deleted, true);
  });
});

describe('governance: policies, decisions, records, usage, limits, keys, teams', () => {
  test('a team, its key, a deny policy (PolicyViolationError with policy and rule), its decision, limits and records', async () => {
    const team = await client.teams.create({ name: uniq('sdk-team') });
    const teams = [];
    for await (const t of client.teams.list()) teams.push(t.id);
    assert.ok(teams.includes(team.id));
    assert.equal((await client.teams.update(team.id, { capture: true })).capture, true);

    const key = await client.keys.create({ name: 'sdk-test', team_id: team.id, scopes: ['inference'] });
    assert.match(key.key, /^sk-sov-/);
    const keys = [];
    for await (const k of client.keys.list({ team_id: team.id })) keys.push(k.id);
    assert.deepEqual(keys, [key.id]);
    const user = new Sovereign({ baseURL, apiKey: key.key, maxRetries: 0 });
    await assert.rejects(user.keys.list(), (e) => e instanceof S.PermissionDeniedError && e instanceof OpenAI.PermissionDeniedError);

    const policy = await client.policies.create({
      name: uniq('sdk-policy'), scope: 'team', scope_id: team.id, enabled: true,
      rules: [{ name: 'no-zorblat', stage: 'input', when: 'input.contains("zorblat")', action: 'deny', reason: 'zorblat is secret' }],
    });
    const tested = await client.policies.test({ policy_id: policy.id, input: { input: 'tell me about zorblat' } });
    assert.equal(tested.action, 'deny');
    await assert.rejects(user.chat.completions.create({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'Tell me about zorblat.' }], max_tokens: 4 }), (e) => {
      assert.ok(e instanceof S.PolicyViolationError && e instanceof OpenAI.PermissionDeniedError, String(e));
      assert.equal(e.code, 'policy_violation');
      assert.equal(e.policy, policy.name);
      assert.equal(e.rule, 'no-zorblat');
      return true;
    });
    // decisions are stored off the request path: the listing may run before the writer does
    let decisions = [];
    await until(async () => {
      decisions = [];
      for await (const d of client.policyDecisions.list({ policy_id: policy.id })) decisions.push(d);
      return decisions.length >= 1;
    }, 30_000, 'the policy decision');
    assert.equal(decisions.length, 1);
    assert.equal(decisions[0].action, 'deny');
    assert.equal(decisions[0].rule, 'no-zorblat');
    assert.equal((await client.policyDecisions.retrieve(decisions[0].id)).id, decisions[0].id);
    assert.equal((await client.policies.delete(policy.id)).deleted, true);

    // a limit rule: the second request in the minute is a RateLimitError with the headers parsed
    await client.limits.rules.set('key', key.id, { requests_per_minute: 1 });
    const first = await user.chat.completions.create({ model: CHAT_MODEL, messages: CAPITAL, max_tokens: 4, temperature: 0 }).withResponse();
    assert.equal(first.response.headers.get('x-ratelimit-limit-requests'), '1');
    await assert.rejects(user.chat.completions.create({ model: CHAT_MODEL, messages: CAPITAL, max_tokens: 4 }), (e) => {
      assert.ok(e instanceof S.RateLimitError && e instanceof OpenAI.RateLimitError, String(e));
      assert.equal(e.rateLimit.limitRequests, 1);
      assert.equal(e.rateLimit.remainingRequests, 0);
      assert.ok(e.retryAfter > 0 && e.retryAfter <= 60, `retryAfter ${e.retryAfter}`);
      return true;
    });
    const rule = await client.limits.rules.retrieve('key', key.id);
    assert.equal(rule.requests_per_minute, 1);
    const status = await user.limits.retrieve();
    assert.ok(status.data.some((l) => l.name === 'requests_per_minute' && l.limit === 1));
    // a monthly token budget (monthly, so that no day boundary falls between the two calls):
    // once spent, QuotaExceededError (a RateLimitError) until the month ends,
    // raised at once even with retries on (the client does not sleep until midnight)
    await client.limits.rules.set('key', key.id, { tokens_per_month: 24 });
    await user.chat.completions.create({ model: CHAT_MODEL, messages: CAPITAL, max_tokens: 4, temperature: 0 });
    const t0 = Date.now();
    await assert.rejects(user.withOptions({ maxRetries: 3 }).chat.completions.create({ model: CHAT_MODEL, messages: CAPITAL, max_tokens: 4 }), (e) => {
      assert.ok(e instanceof S.QuotaExceededError && e instanceof OpenAI.RateLimitError, String(e));
      assert.equal(e.code, 'quota_exceeded');
      assert.ok(e.retryAfter >= 0 && e.retryAfter <= 31 * 86_400, `retryAfter ${e.retryAfter}`);
      return true;
    });
    assert.ok(Date.now() - t0 < 5000);
    await client.limits.rules.delete('key', key.id);

    // records of this team (written asynchronously): logs auto-paginated one per page, export, usage
    let logs = [];
    await until(async () => {
      logs = [];
      for await (const l of client.logs.list({ team_id: team.id, limit: 1 })) logs.push(l);
      // every call of the team's key: GET /v1/keys 403, policy 403, chat 200, chat 429, GET /v1/limits,
      // chat 200 and 429 under the quota. All seven, not fewer: records are stored in batches, so the
      // last may land just after a listing that saw the others, and the export below must see the same set.
      return logs.length >= 7;
    }, 30_000, 'the team\'s records');
    assert.equal(logs.length, 7, JSON.stringify(logs.map((l) => [l.route, l.status])));
    assert.ok(logs.some((l) => l.status === 403 && l.error_code === 'policy_violation'));
    assert.ok(logs.some((l) => l.status === 429 && l.error_code === 'rate_limit_exceeded'));
    assert.equal(new Set(logs.map((l) => l.id)).size, logs.length);
    const one = await client.logs.retrieve(logs[0].id);
    assert.equal(one.id, logs[0].id);
    const exported = [];
    for await (const l of client.logs.export({ team_id: team.id })) exported.push(l.id);
    assert.deepEqual(exported.sort(), logs.map((l) => l.id).sort());
    const usage = await client.usage.retrieve({ group_by: 'model', team_id: team.id });
    const row = usage.data.find((r) => r.group === CHAT_MODEL);
    assert.ok(row && row.requests >= 1, JSON.stringify(usage));

    // key rotation and revocation
    const rotated = await client.keys.rotate(key.id, { grace_seconds: 0 });
    assert.notEqual(rotated.key, key.key);
    await client.keys.revoke(rotated.id);
    await assert.rejects(new Sovereign({ baseURL, apiKey: rotated.key, maxRetries: 0 }).models.list(), S.AuthenticationError);
  });
});

describe('batch', () => {
  const reqs = [
    { model: CHAT_MODEL, messages: CAPITAL, max_tokens: 16, temperature: 0 },
    { model: 'no-such-model', messages: CAPITAL, max_tokens: 4 },
    { model: CHAT_MODEL, messages: [{ role: 'user', content: 'What is the capital of Italy?' }], max_tokens: 16, temperature: 0 },
  ];

  test('batch.chat: bounded concurrency, progress, ordered results with per-item errors', async () => {
    const progress = [];
    const results = await client.batch.chat(reqs, { concurrency: 2, onProgress: (p) => progress.push(p) });
    assert.equal(results.length, 3);
    assert.deepEqual(results.map((r) => [r.index, r.ok]), [[0, true], [1, false], [2, true]]);
    assert.match(results[0].result.choices[0].message.content, /Paris/);
    assert.match(results[2].result.choices[0].message.content, /Rome/);
    assert.ok(results[1].error instanceof S.ModelNotFoundError);
    assert.deepEqual(progress.map((p) => p.completed), [1, 2, 3]);
    assert.deepEqual(progress.at(-1), { completed: 3, succeeded: 2, failed: 1, total: 3 });
  });

  test('batch.map never runs more than `concurrency` at once', async () => {
    let running = 0;
    let peak = 0;
    const out = await client.batch.map([...Array(10).keys()], async (i) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 20));
      running--;
      return i * 2;
    }, { concurrency: 3 });
    assert.equal(peak, 3);
    assert.deepEqual(out.map((r) => r.result), [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
  });

  test('batch.embeddings', async () => {
    const results = await client.batch.embeddings([{ model: EMBED_MODEL, input: 'kitten' }, { model: EMBED_MODEL, input: 'car' }], { concurrency: 2 });
    assert.ok(results.every((r) => r.ok));
    assert.equal(results[1].result.data[0].embedding.length, 384);
  });

  test('batch.runChat: the same list through the Batch API, results in order', async () => {
    const seen = [];
    const { batch, results } = await client.batch.runChat(reqs, { pollInterval: 500, timeout: 240_000, onProgress: (b) => seen.push(b.status) });
    assert.equal(batch.status, 'completed');
    assert.ok(seen.length >= 1);
    assert.equal(results.length, 3);
    assert.equal(results[0].ok, true);
    assert.match(results[0].result.choices[0].message.content, /Paris/);
    assert.equal(results[1].ok, false);
    assert.ok(results[1].error instanceof S.BatchItemError);
    assert.match(results[2].result.choices[0].message.content, /Rome/);
  });
});
