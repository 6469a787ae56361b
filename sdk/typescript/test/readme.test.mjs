// Runs the README's examples, as written, against the live server, and installs
// the package the way the README says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiKey, baseURL } from './helpers.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
const env = { ...process.env, SOVEREIGN_API_KEY: apiKey, SOVEREIGN_BASE_URL: baseURL };

test('the README has examples for every feature group', () => {
  assert.ok(blocks.length >= 12, `${blocks.length} js blocks`);
  for (const word of ['client.chat.completions', 'rerank', 'createWithCitations', 'models.compare', 'documents.upload', 'collections.search', 'sourceLinks', 'workflows.run', 'approvals', 'runs.events', 'events.stream', 'logs.list', 'usage', 'policies', 'policyDecisions', 'limits', 'webhooks.unwrap', 'keys', 'teams', 'batch.chat', 'batch.runChat', 'export default']) {
    assert.ok(blocks.some((b) => b.includes(word)), `no example uses ${word}`);
  }
});

// Each block is a module of its own, inside the package, so that `@sovereign/sdk`
// resolves to this package (self-reference) and `openai` to its peer.
const dir = join(root, 'test', '.readme');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
blocks.forEach((code, i) => {
  const first = code.split('\n').find((l) => l.startsWith('//') || l.includes('client.') || l.includes('export default')) ?? '';
  test(`README example ${i + 1}: ${first.trim().slice(0, 60)}`, { timeout: 240_000 }, () => {
    const file = join(dir, `example-${i + 1}.mjs`);
    writeFileSync(file, code);
    let script = file;
    if (/^export default \{/m.test(code)) {
      // a fetch handler (Workers style): call it the way the runtime would
      script = join(dir, `example-${i + 1}-run.mjs`);
      writeFileSync(script, `import handler from './example-${i + 1}.mjs';
const res = await handler.fetch(new Request('http://worker/', { method: 'POST', body: JSON.stringify({ question: 'What is the capital of France?' }) }),
  { SOVEREIGN_API_KEY: process.env.SOVEREIGN_API_KEY, SOVEREIGN_BASE_URL: process.env.SOVEREIGN_BASE_URL });
const body = await res.json();
if (!/Paris/.test(body.answer)) throw new Error('unexpected answer: ' + JSON.stringify(body));
console.log(body.answer);
`);
    }
    const out = execFileSync(process.execPath, [script], { env, cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 230_000 });
    assert.ok(out.trim().length > 0, 'the example printed nothing');
  });
});

test('npm install ./sdk/typescript from a repository root installs a working package (and its openai peer)', { timeout: 240_000 }, () => {
  const repo = mkdtempSync(join(tmpdir(), 'sovereign-install-'));
  try {
    // the shape of the repository: a root project with the SDK at sdk/typescript (what git holds: no node_modules)
    const sdk = join(repo, 'sdk', 'typescript');
    mkdirSync(sdk, { recursive: true });
    for (const f of ['package.json', 'package-lock.json', 'README.md', 'dist', 'src']) cpSync(join(root, f), join(sdk, f), { recursive: true });
    writeFileSync(join(repo, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' } });
    npm(['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', './sdk/typescript'], repo);
    const deps = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).dependencies;
    assert.equal(deps['@sovereign/sdk'], 'file:sdk/typescript');
    const app = `import Sovereign from '@sovereign/sdk';
import OpenAI from 'openai';
const client = new Sovereign();
if (!(client instanceof OpenAI)) throw new Error('not an OpenAI client');
const r = await client.chat.completions.create({ model: 'gemma3-270m', messages: [{ role: 'user', content: 'What is the capital of France?' }], max_tokens: 16, temperature: 0 });
console.log(r.choices[0].message.content);
`;
    writeFileSync(join(repo, 'app.mjs'), app);
    const out = execFileSync(process.execPath, ['app.mjs'], { cwd: repo, env, encoding: 'utf8' });
    assert.match(out, /Paris/);

    // from a project elsewhere: --install-links packs the folder like a registry package
    const other = join(repo, 'elsewhere');
    mkdirSync(other);
    writeFileSync(join(other, 'package.json'), JSON.stringify({ name: 'other', private: true, type: 'module' }));
    writeFileSync(join(other, 'app.mjs'), app);
    npm(['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--install-links', sdk], other);
    assert.match(execFileSync(process.execPath, ['app.mjs'], { cwd: other, env, encoding: 'utf8' }), /Paris/);
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
});
