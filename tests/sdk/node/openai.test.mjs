// The official `openai` npm package, unmodified, against a live Sovereign server.
//
// Only the base URL differs from talking to OpenAI. The server is started by
// scripts/sdk-test.sh, which passes:
//
//   SOVEREIGN_BASE_URL  e.g. http://127.0.0.1:PORT/v1
//   SOVEREIGN_API_KEY   a key with the inference and models:read scopes
//
// Run with node's built-in runner: node --test
// Generations are kept short (max_tokens <= 32): the suite runs on CPU.

import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const CHAT_MODEL = 'gemma3-270m';
const EMBED_MODEL = 'all-minilm-l6-v2';
const EMBED_DIMS = 384;
const WRONG_KEY = 'sk-sov-' + 'W'.repeat(40);
const WORDS = ['kitten', 'cat', 'car'];

const baseURL = process.env.SOVEREIGN_BASE_URL;
const apiKey = process.env.SOVEREIGN_API_KEY;
if (!baseURL || !apiKey) {
  throw new Error('SOVEREIGN_BASE_URL and SOVEREIGN_API_KEY must be set: run the suite through scripts/sdk-test.sh');
}

// No retries: a failure must show the server's first answer, not a retried one.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 300_000 });

const cos = (a, b) => {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / (Math.sqrt(na) * Math.sqrt(nb));
};
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const maxAbsDiff = (a, b) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));

describe('chat', () => {
  test('answers "What is the capital of France?" with Paris', async () => {
    const resp = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
      temperature: 0,
      max_tokens: 32,
    });
    assert.equal(resp.object, 'chat.completion');
    assert.equal(resp.model, CHAT_MODEL);
    assert.equal(resp.choices.length, 1);
    const choice = resp.choices[0];
    assert.equal(choice.message.role, 'assistant');
    assert.match(choice.message.content, /Paris/);
    assert.ok(['stop', 'length'].includes(choice.finish_reason), choice.finish_reason);
    assert.ok(resp.usage.prompt_tokens > 0);
    assert.ok(resp.usage.completion_tokens > 0);
    assert.equal(resp.usage.total_tokens, resp.usage.prompt_tokens + resp.usage.completion_tokens);
  });

  test('streams deltas and a final usage chunk with include_usage', async () => {
    const stream = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
      temperature: 0,
      max_tokens: 32,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    const finishReasons = [];
    const usageChunks = [];
    const ids = new Set();
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      ids.add(chunk.id);
      if (chunk.usage) usageChunks.push(chunk);
      for (const choice of chunk.choices) {
        if (choice.delta.content) text += choice.delta.content;
        if (choice.finish_reason) finishReasons.push(choice.finish_reason);
      }
    }
    assert.ok(text.trim().length > 0, 'streamed deltas concatenate to an empty answer');
    assert.match(text, /Paris/);
    assert.equal(ids.size, 1);
    assert.equal(finishReasons.length, 1);
    assert.ok(['stop', 'length'].includes(finishReasons[0]));
    assert.equal(usageChunks.length, 1, 'include_usage must add exactly one usage chunk');
    const last = usageChunks[0];
    assert.deepEqual(last.choices, []);
    assert.ok(last.usage.prompt_tokens > 0);
    assert.ok(last.usage.completion_tokens > 0);
  });

  test('stream helper (chat.completions.stream) gives the final message', async () => {
    const runner = client.chat.completions.stream({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
      temperature: 0,
      max_tokens: 32,
    });
    const final = await runner.finalChatCompletion();
    assert.match(final.choices[0].message.content, /Paris/);
  });

  test('max_tokens cuts the answer with finish_reason length', async () => {
    const resp = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'Count from one to one hundred in words, separated by commas.' }],
      temperature: 0,
      max_tokens: 3,
    });
    assert.equal(resp.choices[0].finish_reason, 'length');
    assert.equal(resp.usage.completion_tokens, 3);
  });

  test('seed makes sampling at temperature 1 reproducible', async () => {
    const ask = async () =>
      (
        await client.chat.completions.create({
          model: CHAT_MODEL,
          messages: [{ role: 'user', content: 'Write one sentence about the sea.' }],
          temperature: 1,
          seed: 1234,
          max_tokens: 16,
        })
      ).choices[0].message.content;
    const a = await ask();
    const b = await ask();
    assert.ok(a);
    assert.equal(a, b);
  });
});

describe('completions', () => {
  test('prompt form', async () => {
    const resp = await client.completions.create({
      model: CHAT_MODEL,
      prompt: 'The capital of France is',
      temperature: 0,
      max_tokens: 8,
    });
    assert.equal(resp.object, 'text_completion');
    assert.ok(resp.choices[0].text.length > 0);
    assert.ok(resp.usage.completion_tokens > 0 && resp.usage.completion_tokens <= 8);
  });
});

// Sovereign's extension of /v1/completions: citations and sources go in the
// body next to OpenAI's parameters, and come back next to its fields.
describe('answers with sources', () => {
  const MOON = { id: 'memo-7', title: 'Tarsis memo', text: 'The moon of Tarsis is bright green and smells of mint.' };
  const params = {
    model: CHAT_MODEL,
    prompt: 'What colour is the moon of Tarsis?',
    max_tokens: 32,
    temperature: 0,
    citations: true,
    sources: { documents: [MOON] },
  };
  const check = (text, citations) => {
    assert.ok(citations && citations.length > 0, `no citations for ${JSON.stringify(text)}`);
    citations.forEach((c, i) => {
      assert.equal(c.index, i);
      // Offsets count characters (code points); this answer is ASCII.
      assert.equal(text.slice(c.start, c.end), c.text);
    });
    assert.equal(citations[0].sources[0].id, 'memo-7');
    assert.ok(text.includes('[1]'));
  };

  test('completions.create returns citations whose offsets slice the text', async () => {
    const resp = await client.completions.create(params);
    assert.equal(resp.object, 'text_completion');
    check(resp.choices[0].text, resp.citations);
  });

  test('a stream ends with a chunk carrying the citations', async () => {
    const stream = await client.completions.create({ ...params, stream: true });
    let text = '';
    let citations;
    for await (const chunk of stream) {
      assert.equal(citations, undefined, 'text after the citations chunk');
      if (chunk.choices.length > 0) text += chunk.choices[0].text;
      if (chunk.citations) citations = chunk.citations;
    }
    check(text, citations);
  });
});

describe('embeddings', () => {
  let floats;
  before(async () => {
    const resp = await client.embeddings.create({ model: EMBED_MODEL, input: WORDS, encoding_format: 'float' });
    assert.equal(resp.object, 'list');
    assert.deepEqual(resp.data.map((d) => d.index), [0, 1, 2]);
    assert.ok(resp.usage.prompt_tokens > 0);
    floats = resp.data.map((d) => d.embedding);
  });

  test('float vectors have 384 dims and kitten is closer to cat than to car', () => {
    for (const v of floats) assert.equal(v.length, EMBED_DIMS);
    const [kitten, cat, car] = floats;
    assert.ok(cos(kitten, cat) > cos(kitten, car), `cos(kitten,cat)=${cos(kitten, cat)} cos(kitten,car)=${cos(kitten, car)}`);
  });

  test('SDK default (base64, decoded by the SDK) equals the float result', async () => {
    const resp = await client.embeddings.create({ model: EMBED_MODEL, input: WORDS });
    resp.data.forEach((d, i) => {
      assert.ok(Array.isArray(d.embedding));
      assert.equal(d.embedding.length, EMBED_DIMS);
      assert.ok(maxAbsDiff(d.embedding, floats[i]) < 1e-5);
    });
  });

  test('explicit base64 is little-endian float32', async () => {
    const resp = await client.embeddings.create({ model: EMBED_MODEL, input: WORDS, encoding_format: 'base64' });
    resp.data.forEach((d, i) => {
      assert.equal(typeof d.embedding, 'string');
      const buf = Buffer.from(d.embedding, 'base64');
      assert.equal(buf.length, EMBED_DIMS * 4);
      const v = Array.from({ length: EMBED_DIMS }, (_, j) => buf.readFloatLE(j * 4));
      assert.ok(maxAbsDiff(v, floats[i]) < 1e-5);
    });
  });

  test('dimensions=128 gives unit vectors of 128 dims', async () => {
    const resp = await client.embeddings.create({ model: EMBED_MODEL, input: WORDS, dimensions: 128 });
    for (const d of resp.data) {
      assert.equal(d.embedding.length, 128);
      assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-3);
    }
  });
});

describe('models', () => {
  test('list contains both models', async () => {
    const ids = [];
    for await (const m of client.models.list()) {
      assert.equal(m.object, 'model');
      ids.push(m.id);
    }
    assert.ok(ids.includes(CHAT_MODEL), ids.join(','));
    assert.ok(ids.includes(EMBED_MODEL), ids.join(','));
  });

  test('retrieve gemma3-270m', async () => {
    const m = await client.models.retrieve(CHAT_MODEL);
    assert.equal(m.id, CHAT_MODEL);
    assert.equal(m.object, 'model');
    assert.equal(typeof m.created, 'number');
    assert.ok(m.owned_by);
  });
});

describe('errors', () => {
  test('a bad key raises OpenAI.AuthenticationError', async () => {
    const bad = new OpenAI({ baseURL, apiKey: WRONG_KEY, maxRetries: 0 });
    await assert.rejects(bad.models.list(), (err) => {
      assert.ok(err instanceof OpenAI.AuthenticationError, `got ${err?.constructor?.name}: ${err?.message}`);
      assert.equal(err.status, 401);
      assert.equal(err.code, 'invalid_api_key');
      assert.equal(err.type, 'authentication_error');
      return true;
    });
  });

  test('a bad key on chat raises OpenAI.AuthenticationError', async () => {
    const bad = new OpenAI({ baseURL, apiKey: WRONG_KEY, maxRetries: 0 });
    await assert.rejects(
      bad.chat.completions.create({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }),
      OpenAI.AuthenticationError,
    );
  });

  test('an unknown model raises OpenAI.NotFoundError', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }),
      (err) => {
        assert.ok(err instanceof OpenAI.NotFoundError, `got ${err?.constructor?.name}: ${err?.message}`);
        assert.equal(err.status, 404);
        assert.equal(err.code, 'model_not_found');
        return true;
      },
    );
  });

  test('retrieving an unknown model raises OpenAI.NotFoundError', async () => {
    await assert.rejects(client.models.retrieve('no-such-model'), OpenAI.NotFoundError);
  });

  test('a bad request raises OpenAI.BadRequestError', async () => {
    await assert.rejects(
      client.chat.completions.create({
        model: CHAT_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        temperature: 5,
        max_tokens: 1,
      }),
      (err) => {
        assert.ok(err instanceof OpenAI.BadRequestError, `got ${err?.constructor?.name}: ${err?.message}`);
        assert.equal(err.status, 400);
        assert.equal(err.param, 'temperature');
        return true;
      },
    );
  });
});

describe('environment', () => {
  test('the client reads the key from OPENAI_API_KEY when none is passed', async () => {
    const saved = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = apiKey;
    try {
      const fromEnv = new OpenAI({ baseURL, maxRetries: 0 });
      assert.equal(fromEnv.apiKey, apiKey);
      const m = await fromEnv.models.retrieve(CHAT_MODEL);
      assert.equal(m.id, CHAT_MODEL);
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });
});

describe('tools', () => {
  // The default model has no chat template: its calls take the generic JSON
  // envelope, and "required" makes the grammar force one.
  const weather = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  };

  test('tool_choice required returns one call with valid arguments', async () => {
    const resp = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'What is the weather in Rome?' }],
      tools: [weather],
      tool_choice: 'required',
      parallel_tool_calls: false,
      temperature: 0,
      max_tokens: 64,
    });
    const choice = resp.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, 'get_weather');
    assert.ok(['Paris', 'Rome'].includes(JSON.parse(call.function.arguments).city));
  });

  test('tool_choice none and auto answer (auto may call)', async () => {
    for (const choice of ['none', 'auto']) {
      const resp = await client.chat.completions.create({
        model: CHAT_MODEL,
        messages: [{ role: 'user', content: 'Say hello.' }],
        tools: [weather],
        tool_choice: choice,
        temperature: 0,
        max_tokens: 16,
      });
      const msg = resp.choices[0].message;
      if (choice === 'none' || !msg.tool_calls?.length) {
        assert.ok(msg.content);
        assert.ok(['stop', 'length'].includes(resp.choices[0].finish_reason));
      } else {
        assert.equal(msg.tool_calls[0].function.name, 'get_weather');
      }
    }
  });

  test('a round trip: the call, its result as a tool message, then an answer', async () => {
    const question = { role: 'user', content: 'What is the weather in Rome?' };
    const first = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [question],
      tools: [weather],
      tool_choice: 'required',
      parallel_tool_calls: false,
      temperature: 0,
      max_tokens: 64,
    });
    const call = first.choices[0].message.tool_calls[0];
    const second = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [question, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '{"temp_c": 21, "sky": "clear"}' }],
      tools: [weather],
      tool_choice: 'none',
      temperature: 0,
      max_tokens: 24,
    });
    assert.ok(second.choices[0].message.content);
    assert.ok(!second.choices[0].message.tool_calls?.length);
  });

  test('the stream helper assembles a streamed call', async () => {
    const stream = client.chat.completions.stream({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      temperature: 0,
      max_tokens: 64,
    });
    const final = await stream.finalChatCompletion();
    const call = final.choices[0].message.tool_calls[0];
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.equal(call.function.name, 'get_weather');
    assert.ok(['Paris', 'Rome'].includes(JSON.parse(call.function.arguments).city));
  });

  test('a forced call cut short by max_tokens keeps its arguments so far and finish_reason length', async () => {
    const params = {
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      temperature: 0,
    };
    const squeeze = (s) => s.replace(/\s+/g, '');
    const whole = (await client.chat.completions.create({ ...params, max_tokens: 64 })).choices[0].message.tool_calls[0];
    const cut = await client.chat.completions.create({ ...params, max_tokens: 18 });
    const choice = cut.choices[0];
    assert.equal(choice.finish_reason, 'length');
    assert.equal(choice.message.content, null, 'no content: never the server\'s call format as text');
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    assert.ok(call.id.startsWith('call_'));
    assert.throws(() => JSON.parse(call.function.arguments), SyntaxError);
    assert.ok(squeeze(whole.function.arguments).startsWith(squeeze(call.function.arguments)));

    const stream = client.chat.completions.stream({ ...params, max_tokens: 18 });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'length');
    assert.ok(!final.choices[0].message.content);
    assert.deepEqual(final.choices[0].message.tool_calls.map((c) => [c.function.name, c.function.arguments]), [['get_weather', call.function.arguments]]);
  });
});

describe('responses', () => {
  const base = {
    model: CHAT_MODEL,
    instructions: 'Answer in one short sentence.',
    max_output_tokens: 24,
    temperature: 0,
  };
  const weatherTool = {
    type: 'function',
    name: 'get_weather',
    description: 'Current weather in a city',
    strict: true,
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } },
      required: ['city'],
      additionalProperties: false,
    },
  };

  test('responses.create answers with output_text', async () => {
    const resp = await client.responses.create({ ...base, input: 'What is the capital of France?' });
    assert.match(resp.id, /^resp_/);
    assert.equal(resp.object, 'response');
    assert.match(resp.output_text, /Paris/);
    assert.ok(resp.usage.input_tokens > 0 && resp.usage.output_tokens > 0);
  });

  test('the stream helper rebuilds the same answer from the events', async () => {
    const plain = await client.responses.create({ ...base, input: 'What is the capital of France?', store: false });
    const stream = client.responses.stream({ ...base, input: 'What is the capital of France?', store: false });
    const types = [];
    stream.on('event', (ev) => types.push(ev.type));
    const final = await stream.finalResponse();
    assert.equal(final.output_text, plain.output_text);
    assert.deepEqual(types.slice(0, 2), ['response.created', 'response.in_progress']);
    assert.ok(types.includes('response.output_text.delta'));
    assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)));
  });

  test('a function call, its output back with previous_response_id, retrieve and delete', async () => {
    const called = await client.responses.create({
      ...base,
      input: 'What is the weather in Rome?',
      tools: [weatherTool],
      tool_choice: 'required',
      parallel_tool_calls: false,
      max_output_tokens: 64,
    });
    const call = called.output.find((o) => o.type === 'function_call');
    assert.ok(call, JSON.stringify(called.output));
    assert.equal(call.name, 'get_weather');
    assert.match(call.call_id, /^call_/);
    assert.ok(['Paris', 'Rome'].includes(JSON.parse(call.arguments).city));

    const answer = await client.responses.create({
      ...base,
      previous_response_id: called.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temp_c": 21, "sky": "sunny"}' }],
      max_output_tokens: 32,
    });
    assert.ok(answer.output_text.length > 0);
    assert.equal(answer.previous_response_id, called.id);

    const got = await client.responses.retrieve(answer.id);
    assert.equal(got.output_text, answer.output_text);
    await client.responses.delete(answer.id);
    await assert.rejects(client.responses.retrieve(answer.id), OpenAI.NotFoundError);
  });
});
