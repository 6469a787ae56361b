// Shared by the tests: the live server's address and key, given by test.sh.
import http from 'node:http';

export const baseURL = process.env.SOVEREIGN_BASE_URL;
export const apiKey = process.env.SOVEREIGN_API_KEY;
if (!baseURL || !apiKey) {
  throw new Error('SOVEREIGN_BASE_URL and SOVEREIGN_API_KEY must be set (run sdk/typescript/test.sh)');
}
export const CHAT_MODEL = 'gemma3-270m';
export const EMBED_MODEL = 'all-minilm-l6-v2';
export const uniq = (p) => `${p}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** Starts a node:http server on a free loopback port; returns { url, close, server }. */
export async function listen(handler) {
  const server = http.createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
  };
}

export const readBody = (req) =>
  new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

/** Waits until pred() is truthy (polling), or fails after ms. */
export async function until(pred, ms = 60_000, what = 'condition') {
  const end = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
