// webhooks.verify / unwrap cross-checked against the official standardwebhooks package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import OpenAI from 'openai';
import Sovereign, { verifyWebhook, unwrapWebhook, signWebhook, WebhookVerificationError } from '@sovereign/sdk';

const secret = 'whsec_' + btoa('0123456789abcdef0123456789abcdef');
const secret2 = 'whsec_' + btoa('fedcba9876543210fedcba9876543210');
const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'workflow.run.succeeded', created_at: 1, data: { run_id: 'run_1', note: 'héllo ✓' } });
const now = () => Math.floor(Date.now() / 1000);
const client = new Sovereign({ apiKey: 'sk-test', baseURL: 'http://127.0.0.1:9/v1', webhookSecret: secret });

test('a signature made by standardwebhooks verifies (Headers and plain objects)', async () => {
  const ts = now();
  const sig = new StandardWebhook(secret).sign('msg_1', new Date(ts * 1000), body);
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(ts), 'webhook-signature': sig };
  await client.webhooks.verify(body, headers, secret);
  await client.webhooks.verify(body, new Headers(headers)); // the client's webhookSecret
  await client.webhooks.verify(new TextEncoder().encode(body), { 'Webhook-Id': 'msg_1', 'Webhook-Timestamp': String(ts), 'Webhook-Signature': sig }, secret);
  const ev = await client.webhooks.unwrap(body, headers);
  assert.equal(ev.data.note, 'héllo ✓');
  await client.webhooks.verifySignature(body, headers); // openai's method name, same check
});

test('a signature made by the SDK verifies with standardwebhooks', async () => {
  const ts = now();
  const sig = await signWebhook(secret, 'msg_2', ts, body);
  assert.equal(sig, new StandardWebhook(secret).sign('msg_2', new Date(ts * 1000), body));
  const headers = { 'webhook-id': 'msg_2', 'webhook-timestamp': String(ts), 'webhook-signature': sig };
  assert.deepEqual(new StandardWebhook(secret).verify(body, headers), JSON.parse(body));
});

test('two signatures (rotation): either secret verifies; a third does not', async () => {
  const ts = now();
  const both = `${await signWebhook(secret2, 'msg_3', ts, body)} ${await signWebhook(secret, 'msg_3', ts, body)}`;
  const headers = { 'webhook-id': 'msg_3', 'webhook-timestamp': String(ts), 'webhook-signature': both };
  await verifyWebhook(body, headers, secret);
  await verifyWebhook(body, headers, secret2);
  new StandardWebhook(secret).verify(body, headers);
  await assert.rejects(verifyWebhook(body, headers, 'whsec_' + btoa('another-secret-another-secret!!')), WebhookVerificationError);
});

test('tampering, wrong id, stale or future timestamps and missing headers are rejected, like standardwebhooks', async () => {
  const ts = now();
  const sig = await signWebhook(secret, 'msg_4', ts, body);
  const ok = { 'webhook-id': 'msg_4', 'webhook-timestamp': String(ts), 'webhook-signature': sig };
  const cases = [
    [body + ' ', ok],
    [body, { ...ok, 'webhook-id': 'msg_5' }],
    [body, { ...ok, 'webhook-timestamp': String(ts - 600), 'webhook-signature': await signWebhook(secret, 'msg_4', ts - 600, body) }],
    [body, { ...ok, 'webhook-timestamp': String(ts + 600), 'webhook-signature': await signWebhook(secret, 'msg_4', ts + 600, body) }],
    [body, { ...ok, 'webhook-signature': 'v2,' + sig.slice(3) }],
    [body, { 'webhook-id': 'msg_4', 'webhook-timestamp': String(ts) }],
  ];
  for (const [payload, headers] of cases) {
    assert.throws(() => new StandardWebhook(secret).verify(payload, headers));
    await assert.rejects(verifyWebhook(payload, headers, secret), (e) => e instanceof WebhookVerificationError && e instanceof OpenAI.InvalidWebhookSignatureError);
  }
  // a custom tolerance accepts the older one
  const old = ts - 600;
  await unwrapWebhook(body, { ...ok, 'webhook-timestamp': String(old), 'webhook-signature': await signWebhook(secret, 'msg_4', old, body) }, secret, 900);
});
