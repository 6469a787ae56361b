// Retries and idempotency: a local node:http server scripts the answers; a
// proxy in front of the real server loses the first create's response.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Sovereign, { RateLimitError, ModelOverloadedError, BadRequestError, QuotaExceededError, PolicyViolationError, ConflictError } from '@sovereign/sdk';
import { apiKey, baseURL, listen, readBody, uniq } from './helpers.mjs';

const ok = (res, body) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const fail = (res, status, code, headers = {}, extra = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { message: `scripted ${code}`, type: 'error', param: null, code, ...extra } }));
};
const COMPLETION = {
  id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop', logprobs: null }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};
const ask = (c, opts) => c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, opts);

/** A scripted server: answers[i] handles the i-th request; records every request. */
async function scripted(answers) {
  const seen = [];
  const srv = await listen(async (req, res) => {
    const body = await readBody(req);
    seen.push({ at: Date.now(), method: req.method, url: req.url, headers: req.headers, body: body.toString() });
    const a = answers[Math.min(seen.length - 1, answers.length - 1)];
    a(res);
  });
  return { ...srv, seen, client: (o = {}) => new Sovereign({ baseURL: srv.url + '/v1', apiKey: 'sk-test', ...o }) };
}

describe('retries', () => {
  test('429 with Retry-After: 1, then 200: waits at least 1 s and succeeds', async () => {
    const s = await scripted([(r) => fail(r, 429, 'rate_limit_exceeded', { 'retry-after': '1', 'x-ratelimit-limit-requests': '10', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1s' }), (r) => ok(r, COMPLETION)]);
    try {
      const t0 = Date.now();
      const resp = await ask(s.client());
      assert.equal(resp.choices[0].message.content, 'hi');
      assert.equal(s.seen.length, 2);
      const waited = s.seen[1].at - s.seen[0].at;
      assert.ok(waited >= 1000, `retried after ${waited} ms, Retry-After said 1 s`);
      assert.ok(Date.now() - t0 < 5000);
      assert.equal(s.seen[1].headers['x-stainless-retry-count'], '1');
    } finally {
      await s.close();
    }
  });

  test('503 twice, then 200: retried with backoff and succeeds', async () => {
    const s = await scripted([(r) => fail(r, 503, 'model_overloaded'), (r) => fail(r, 503, 'model_overloaded'), (r) => ok(r, COMPLETION)]);
    try {
      const resp = await ask(s.client({ maxRetries: 2 }));
      assert.equal(resp.id, 'chatcmpl-1');
      assert.equal(s.seen.length, 3);
      // exponential backoff: 0.5 s then 1 s (minus up to 25 % jitter)
      assert.ok(s.seen[1].at - s.seen[0].at >= 350, 'first backoff too short');
      assert.ok(s.seen[2].at - s.seen[1].at >= 700, 'second backoff not longer');
      // every attempt of one POST carries the same Idempotency-Key
      const keys = s.seen.map((x) => x.headers['idempotency-key']);
      assert.ok(keys[0]);
      assert.deepEqual(keys, [keys[0], keys[0], keys[0]]);
    } finally {
      await s.close();
    }
  });

  test('503 beyond maxRetries raises ModelOverloadedError (an OpenAI.InternalServerError)', async () => {
    const s = await scripted([(r) => fail(r, 503, 'model_overloaded', { 'retry-after': '0' })]);
    try {
      await assert.rejects(ask(s.client({ maxRetries: 1 })), (e) => {
        assert.ok(e instanceof ModelOverloadedError);
        assert.ok(e instanceof OpenAI.InternalServerError);
        assert.equal(e.status, 503);
        assert.equal(e.retryAfter, 0);
        return true;
      });
      assert.equal(s.seen.length, 2);
    } finally {
      await s.close();
    }
  });

  test('maxRetries per call overrides the client', async () => {
    const s = await scripted([(r) => fail(r, 503, 'model_overloaded', { 'retry-after': '0' })]);
    try {
      await assert.rejects(ask(s.client({ maxRetries: 5 }), { maxRetries: 0 }), ModelOverloadedError);
      assert.equal(s.seen.length, 1);
    } finally {
      await s.close();
    }
  });

  test('400 is not retried', async () => {
    const s = await scripted([(r) => fail(r, 400, 'invalid_request_error', {}, { param: 'messages' }), (r) => ok(r, COMPLETION)]);
    try {
      await assert.rejects(ask(s.client({ maxRetries: 3 })), (e) => {
        assert.ok(e instanceof BadRequestError);
        assert.ok(e instanceof OpenAI.BadRequestError);
        assert.equal(e.param, 'messages');
        return true;
      });
      assert.equal(s.seen.length, 1);
    } finally {
      await s.close();
    }
  });

  test('429 without retries: RateLimitError with parsed limit headers; quota: QuotaExceededError', async () => {
    const s = await scripted([
      (r) => fail(r, 429, 'rate_limit_exceeded', { 'retry-after': '7', 'x-ratelimit-limit-requests': '60', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '6m0s', 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '12', 'x-ratelimit-reset-tokens': '1.5s' }),
      (r) => fail(r, 429, 'quota_exceeded', { 'retry-after': '3600' }, { type: 'insufficient_quota' }),
    ]);
    try {
      const c = s.client({ maxRetries: 0 });
      await assert.rejects(ask(c), (e) => {
        assert.ok(e instanceof RateLimitError && e instanceof OpenAI.RateLimitError);
        assert.ok(!(e instanceof QuotaExceededError));
        assert.equal(e.retryAfter, 7);
        assert.deepEqual(e.rateLimit, { limitRequests: 60, remainingRequests: 0, resetRequests: 360, limitTokens: 1000, remainingTokens: 12, resetTokens: 1.5 });
        return true;
      });
      await assert.rejects(ask(c), (e) => e instanceof QuotaExceededError && e instanceof OpenAI.RateLimitError && e.retryAfter === 3600);
    } finally {
      await s.close();
    }
  });

  test('a spent quota, or a Retry-After beyond maxRetryAfter, is raised at once, not slept on', async () => {
    const s = await scripted([
      (r) => fail(r, 429, 'quota_exceeded', { 'retry-after': '3600' }, { type: 'insufficient_quota' }),
      (r) => fail(r, 429, 'rate_limit_exceeded', { 'retry-after': '120' }),
      (r) => ok(r, COMPLETION),
    ]);
    try {
      const c = s.client({ maxRetries: 3 });
      const t0 = Date.now();
      await assert.rejects(ask(c), (e) => e instanceof QuotaExceededError && e.retryAfter === 3600);
      assert.equal(s.seen.length, 1);
      await assert.rejects(ask(c), (e) => e instanceof RateLimitError && e.retryAfter === 120);
      assert.equal(s.seen.length, 2);
      assert.ok(Date.now() - t0 < 2000);
      // withOptions keeps the behaviour
      assert.equal((await ask(c.withOptions({ maxRetries: 0 }))).id, 'chatcmpl-1');
    } finally {
      await s.close();
    }
  });

  test('policy_violation carries policy and rule; 409 is retried', async () => {
    const s = await scripted([
      (r) => fail(r, 403, 'policy_violation', {}, { policy: 'no-secrets', rule: 'deny-words' }),
      (r) => fail(r, 409, 'idempotency_key_in_use', { 'retry-after': '0' }),
      (r) => ok(r, COMPLETION),
    ]);
    try {
      const c = s.client({ maxRetries: 2 });
      await assert.rejects(ask(c), (e) => {
        assert.ok(e instanceof PolicyViolationError && e instanceof OpenAI.PermissionDeniedError);
        assert.equal(e.policy, 'no-secrets');
        assert.equal(e.rule, 'deny-words');
        return true;
      });
      const resp = await ask(c);
      assert.equal(resp.id, 'chatcmpl-1');
      assert.equal(s.seen.length, 3);
    } finally {
      await s.close();
    }
  });

  test('a connection error is retried', async () => {
    let n = 0;
    const srv = await listen(async (req, res) => {
      if (n++ === 0) return req.socket.destroy(); // the first connection dies before any answer
      await readBody(req);
      ok(res, COMPLETION);
    });
    try {
      const resp = await ask(new Sovereign({ baseURL: srv.url + '/v1', apiKey: 'sk-test', maxRetries: 2 }));
      assert.equal(resp.id, 'chatcmpl-1');
      assert.equal(n, 2);
    } finally {
      await srv.close();
    }
  });

  test('timeouts are configurable per call', async () => {
    const s = await scripted([(r) => setTimeout(() => ok(r, COMPLETION), 1500)]);
    try {
      await assert.rejects(ask(s.client({ maxRetries: 0 }), { timeout: 200 }), OpenAI.APIConnectionTimeoutError);
      const resp = await ask(s.client({ maxRetries: 0, timeout: 200 }), { timeout: 5000 });
      assert.equal(resp.id, 'chatcmpl-1');
    } finally {
      await s.close();
    }
  });
});

describe('idempotency against the live server', () => {
  test('a create whose response is lost is retried with the same key and returns the same object', async () => {
    const upstream = new URL(baseURL);
    let creates = 0;
    const seen = [];
    const proxy = await listen(async (req, res) => {
      const body = await readBody(req);
      const r = await fetch(new URL(req.url, upstream.origin), {
        method: req.method,
        headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))),
        body: ['GET', 'HEAD'].includes(req.method) ? undefined : body,
      });
      const text = await r.text();
      seen.push({ method: req.method, path: req.url, key: req.headers['idempotency-key'], status: r.status, replayed: r.headers.get('idempotent-replayed'), body: text });
      if (req.method === 'POST' && req.url.endsWith('/collections') && r.ok && creates++ === 0) {
        // the server created it; the client never hears of it
        req.socket.destroy();
        return;
      }
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json', ...(r.headers.get('idempotent-replayed') ? { 'idempotent-replayed': r.headers.get('idempotent-replayed') } : {}) });
      res.end(text);
    });
    try {
      const client = new Sovereign({ baseURL: `${proxy.url}${upstream.pathname}`, apiKey, maxRetries: 2 });
      const name = uniq('idem');
      const col = await client.collections.create({ name });
      const posts = seen.filter((s) => s.method === 'POST');
      assert.equal(posts.length, 2, 'one lost create, one retry');
      assert.equal(posts[0].key, posts[1].key, 'the retry reuses the Idempotency-Key');
      assert.equal(posts[1].replayed, 'true', 'the server replayed the stored response');
      assert.equal(JSON.parse(posts[0].body).id, col.id, 'the retry returned the object the first attempt created');
      // and only one collection of that name exists
      const direct = new Sovereign({ baseURL, apiKey });
      const all = [];
      for await (const c of direct.collections.list()) if (c.name === name) all.push(c);
      assert.equal(all.length, 1);
      await direct.collections.delete(col.id);
    } finally {
      await proxy.close();
    }
  });

  test('the same key with a different body is refused (IdempotencyKeyReusedError, 422)', async () => {
    const { IdempotencyKeyReusedError } = await import('@sovereign/sdk');
    const client = new Sovereign({ baseURL, apiKey, maxRetries: 0 });
    const key = uniq('k');
    const a = await client.teams.create({ name: uniq('t') }, { idempotencyKey: key });
    const again = await client.teams.create({ name: a.name }, { idempotencyKey: key });
    assert.equal(again.id, a.id);
    await assert.rejects(client.teams.create({ name: uniq('other') }, { idempotencyKey: key }), (e) => {
      assert.ok(e instanceof IdempotencyKeyReusedError && e instanceof OpenAI.UnprocessableEntityError);
      assert.equal(e.status, 422);
      assert.equal(e.code, 'idempotency_key_reused');
      return true;
    });
  });

  test('GET requests carry no Idempotency-Key; every POST does', async () => {
    const s = await scripted([(r) => ok(r, { object: 'list', data: [] })]);
    try {
      const c = s.client({ maxRetries: 0 });
      await c.collections.list();
      await c.rerank.create({ model: 'm', query: 'q', documents: ['a'] }).catch(() => {});
      assert.equal(s.seen[0].headers['idempotency-key'], undefined);
      assert.match(s.seen[1].headers['idempotency-key'], /^sov-/);
    } finally {
      await s.close();
    }
  });
});

describe('streams and uploads', () => {
  test('an event stream that drops reconnects with Last-Event-ID and misses nothing', async () => {
    const ev = (n) => `id: evt_${n}\nevent: model.ready\ndata: ${JSON.stringify({ id: `evt_${n}`, object: 'event', type: 'model.ready', created_at: n, data: { n } })}\n\n`;
    const opens = [];
    const srv = await listen((req, res) => {
      opens.push(req.headers['last-event-id'] ?? null);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (opens.length === 1) {
        res.write(': keep-alive\n\n' + ev(1) + ev(2));
        setTimeout(() => req.socket.destroy(), 50); // the connection drops
      } else {
        const after = Number(String(req.headers['last-event-id']).slice(4));
        for (let n = after + 1; n <= 4; n++) res.write(ev(n));
        // stays open: a live stream never ends by itself
      }
    });
    try {
      const c = new Sovereign({ baseURL: srv.url + '/v1', apiKey: 'sk-test' });
      const stream = c.events.stream({ types: ['model.ready'], reconnectDelay: 10 });
      const got = [];
      for await (const e of stream) {
        got.push(e.data.n);
        if (got.length === 4) break;
      }
      assert.deepEqual(got, [1, 2, 3, 4]);
      assert.deepEqual(opens, [null, 'evt_2']);
      assert.equal(stream.lastEventId, 'evt_4');
    } finally {
      await srv.close();
    }
  });

  test('an upload with progress is retried whole, with the same Idempotency-Key', async () => {
    const seen = [];
    const srv = await listen(async (req, res) => {
      const body = await readBody(req);
      seen.push({ key: req.headers['idempotency-key'], type: req.headers['content-type'], body: body.toString('latin1') });
      if (seen.length === 1) return fail(res, 503, 'internal_error', { 'retry-after': '0' });
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'doc_1', object: 'document', status: 'processing' }));
    });
    try {
      const c = new Sovereign({ baseURL: srv.url + '/v1', apiKey: 'sk-test', maxRetries: 2 });
      const data = new Uint8Array(200_000).map((_, i) => i % 251);
      const progress = [];
      const doc = await c.documents.upload('col_1', { file: data, filename: 'a.pdf', title: 'T', onProgress: (a, t) => progress.push([a, t]) });
      assert.equal(doc.id, 'doc_1');
      assert.equal(seen.length, 2);
      assert.equal(seen[0].key, seen[1].key);
      assert.match(seen[0].key, /^sov-upload-/);
      assert.equal(seen[0].body, seen[1].body, 'the retry sends the same bytes');
      assert.match(seen[1].type, /^multipart\/form-data; boundary=/);
      assert.ok(seen[1].body.includes('filename="a.pdf"') && seen[1].body.includes(Buffer.from(data).toString('latin1')));
      const total = progress.at(-1)[1];
      assert.ok(total > data.length);
      assert.ok(progress.filter(([a]) => a < total).length >= 3, 'progress in steps');
      assert.deepEqual(progress.at(-1), [total, total]);
    } finally {
      await srv.close();
    }
  });
});

