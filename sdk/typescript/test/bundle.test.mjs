// The runtime path has no Node-only modules: the entry bundles for an edge target
// (esbuild --platform=neutral) with no built-in left, and dist/ is what src/ builds to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { builtinModules } from 'node:module';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import vm from 'node:vm';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

test('esbuild --bundle --platform=neutral of the entry: no errors, no Node built-ins', async () => {
  const result = await esbuild.build({
    entryPoints: [join(root, 'dist/index.js')],
    bundle: true,
    platform: 'neutral',
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  assert.deepEqual(result.errors, []);
  const imports = Object.values(result.metafile.inputs).flatMap((i) => i.imports.map((x) => x.path));
  const builtin = imports.filter((p) => BUILTINS.has(p) || p.startsWith('node:'));
  assert.deepEqual(builtin, [], `Node built-ins imported: ${builtin.join(', ')}`);
  const external = Object.values(result.metafile.inputs).flatMap((i) => i.imports.filter((x) => x.external).map((x) => x.path));
  assert.deepEqual(external, []);
  const out = result.outputFiles[0].text;
  assert.ok(out.length > 10_000);
  assert.doesNotMatch(out, /\bfrom\s*["'](node:)?(fs|crypto|buffer|http|https|net|stream|path|os|child_process|url|util)["']/);
  assert.doesNotMatch(out, /\brequire\(["'](node:)?[a-z_]+["']\)/);
});

test('the neutral bundle runs with web APIs only (no process, no require): a request to the live server', async () => {
  const { baseURL, apiKey } = await import('./helpers.mjs');
  const result = await esbuild.build({
    entryPoints: [join(root, 'dist/index.js')], bundle: true, platform: 'neutral', format: 'iife', globalName: 'SDK', write: false, logLevel: 'silent',
  });
  // an edge-like global scope: the web platform, nothing of Node's
  const web = {
    fetch, Headers, Request, Response, FormData, Blob, File, URL, URLSearchParams, AbortController, AbortSignal,
    TextEncoder, TextDecoder, ReadableStream, crypto, atob, btoa, setTimeout, clearTimeout, console, Event, EventTarget, DOMException,
  };
  const ctx = vm.createContext({ ...web });
  vm.runInContext(result.outputFiles[0].text, ctx);
  assert.equal(vm.runInContext('typeof process + typeof require + typeof Buffer', ctx), 'undefinedundefinedundefined');
  const SDK = vm.runInContext('SDK', ctx);
  assert.throws(() => new SDK.Sovereign(), /SOVEREIGN_API_KEY/);
  assert.equal(new SDK.Sovereign({ apiKey: 'x' }).baseURL, 'http://127.0.0.1:8080/v1');
  const c = new SDK.Sovereign({ apiKey, baseURL, maxRetries: 0 });
  const models = await c.models.list();
  assert.ok(models.data.some((m) => m.id === 'gemma3-270m'));
  const secret = 'whsec_' + btoa('0123456789abcdef0123456789abcdef');
  const ts = Math.floor(Date.now() / 1000);
  const sig = await SDK.signWebhook(secret, 'msg_1', ts, '{"a":1}');
  const ev = await c.webhooks.unwrap('{"a":1}', { 'webhook-id': 'msg_1', 'webhook-timestamp': String(ts), 'webhook-signature': sig }, secret);
  assert.equal(ev.a, 1);
});

test('esbuild fails the check if a built-in sneaks in (the test can fail)', async () => {
  await assert.rejects(
    esbuild.build({ stdin: { contents: 'import "node:fs"; export * from "./dist/index.js";', resolveDir: root }, bundle: true, platform: 'neutral', format: 'esm', write: false, logLevel: 'silent' }),
  );
});

function files(dir, base = dir) {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p, base) : [p.slice(base.length + 1)];
  });
}

test('the committed dist/ is exactly what src/ builds to', () => {
  const out = mkdtempSync(join(tmpdir(), 'sovereign-sdk-build-'));
  try {
    execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), '--out', out], { stdio: 'pipe' });
    const want = files(out).sort();
    assert.deepEqual(files(join(root, 'dist')).sort(), want, 'dist/ has other files than a fresh build: run npm run build');
    for (const f of want) {
      assert.equal(readFileSync(join(root, 'dist', f), 'utf8'), readFileSync(join(out, f), 'utf8'), `dist/${f} is stale: run npm run build`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('src/types.ts has an interface or type for every schema of docs/openapi.yaml it covers', () => {
  const spec = join(root, '../../docs/openapi.yaml');
  const text = readFileSync(spec, 'utf8');
  const schemas = text.slice(text.indexOf('\n  schemas:\n')).split('\n').map((l) => /^    ([A-Za-z0-9_]+):\s*$/.exec(l)?.[1]).filter(Boolean);
  assert.ok(schemas.length > 100);
  const gen = readFileSync(join(root, 'scripts/gen-types.py'), 'utf8');
  const skip = new Set([...gen.slice(gen.indexOf('SKIP = {'), gen.indexOf('}', gen.indexOf('SKIP = {'))).matchAll(/'([A-Za-z0-9_]+)'/g)].map((m) => m[1]));
  const rename = { Error: 'ErrorObject', Event: 'SovereignEvent', Model: 'SovereignModel', Usage: 'TokenUsage' };
  const types = readFileSync(join(root, 'src/types.ts'), 'utf8');
  const missing = schemas.filter((n) => !skip.has(n)).map((n) => rename[n] ?? n).filter((n) => !new RegExp(`export (interface|type) ${n}\\b`).test(types));
  assert.deepEqual(missing, [], 'regenerate: python3 scripts/gen-types.py ../../docs/openapi.yaml > src/types.ts');
  // Where PyYAML is at hand, the whole file must be what the generator makes of today's spec.
  let haveYaml = true;
  try {
    execFileSync('python3', ['-c', 'import yaml'], { stdio: 'ignore' });
  } catch {
    haveYaml = false;
  }
  if (haveYaml) {
    const fresh = execFileSync('python3', [join(root, 'scripts/gen-types.py'), spec], { encoding: 'utf8' });
    assert.equal(fresh, types, 'src/types.ts is stale: python3 scripts/gen-types.py ../../docs/openapi.yaml > src/types.ts, then npm run build');
  }
});
