// Builds dist/ (ESM JavaScript + .d.ts) from src/ with tsc.
//   node scripts/build.mjs            -> dist/
//   node scripts/build.mjs --out DIR  -> DIR (used by the test that dist/ is up to date)
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const i = process.argv.indexOf('--out');
const out = i > 0 ? resolve(process.argv[i + 1]) : join(root, 'dist');
rmSync(out, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json'), '--outDir', out], {
  stdio: 'inherit',
  cwd: root,
});
