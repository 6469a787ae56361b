// Compiled with `tsc --strict --noEmit` against the built package (dist/*.d.ts):
// what a TypeScript user writes must type-check, and misuse must not.
import OpenAI, { RateLimitError as ORateLimitError, InternalServerError as OInternalServerError, NotFoundError as ONotFoundError } from 'openai';
import Sovereign, {
  type Collection, type Document, type SovereignEvent, type WorkflowRun, type ClientOptions,
  RateLimitError, PolicyViolationError, QuotaExceededError, ModelOverloadedError, NotFoundError, EventStream, type BatchItemResult,
} from '@sovereign/sdk';

export async function main(): Promise<void> {
  const opts: ClientOptions = { maxRetries: 3, timeout: 30_000 };
  const client = new Sovereign(opts);
  const asOpenAI: OpenAI = client; // a Sovereign is an OpenAI
  void asOpenAI;

  const chat: OpenAI.Chat.Completions.ChatCompletion = await client.chat.completions.create({
    model: 'gemma3-270m',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 8,
  });
  const text: string | null = chat.choices[0]!.message.content;
  void text;

  const col: Collection = await client.collections.create({ name: 'docs' });
  const doc: Document = await client.documents.upload(col.id, { file: 'text', filename: 'a.txt', onProgress: (n: number, t: number) => void (n + t) });
  const status: 'processing' | 'ready' | 'failed' = doc.status;
  void status;
  for await (const d of client.collections.documents.list(col.id)) {
    const id: string = d.id;
    void id;
  }

  const run: WorkflowRun = await client.workflows.run('wf_1', { question: 'x' });
  const events: EventStream<SovereignEvent> = client.runs.events(run.id, { lastEventId: undefined });
  for await (const ev of events) {
    const type: string = ev.type;
    void type;
  }
  const last: string | undefined = events.lastEventId;
  void last;

  const results: BatchItemResult<OpenAI.Chat.Completions.ChatCompletion>[] = await client.batch.chat([{ model: 'm', messages: [] }], { concurrency: 2 });
  for (const r of results) {
    if (r.ok) void r.result.id;
    else void r.error.message;
  }

  try {
    await client.models.list();
  } catch (e) {
    if (e instanceof RateLimitError) void [e.retryAfter, e.rateLimit.remainingRequests];
    if (e instanceof PolicyViolationError) void [e.policy, e.rule];
    if (e instanceof QuotaExceededError) { const r: ORateLimitError = e; void r; }
    if (e instanceof ModelOverloadedError) { const r: OInternalServerError = e; void r; }
    if (e instanceof NotFoundError) { const r: ONotFoundError = e; void r; }
  }

  await client.webhooks.verify('{}', { 'webhook-id': 'x' }, 'whsec_x');
  const ev: SovereignEvent = await client.webhooks.unwrap('{}', new Headers());
  void ev;

  // @ts-expect-error: a collection needs a name
  await client.collections.create({});
  // @ts-expect-error: OpenAI's parameter types are kept
  await client.chat.completions.create({ model: 'm' });
  // @ts-expect-error: approval decisions are approve or reject
  await client.approvals.decide('apr_1', { decision: 'maybe' });
}
