// @sovereign/sdk: the official openai client for Sovereign, with Sovereign's resources.
export { Sovereign, Sovereign as default, DEFAULT_BASE_URL, VERSION, readEnv } from './client.js';
export { OpenAI, toFile, APIPromise, PagePromise } from 'openai';
export { OpenAIError, APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError, InvalidWebhookSignatureError, } from 'openai/core/error';
export * from './errors.js';
export * from './resources.js';
export * from './batch.js';
export { EventStream, parseSSE } from './sse.js';
export { verifyWebhook, unwrapWebhook, sign as signWebhook, DEFAULT_TOLERANCE_SECONDS, } from './webhooks.js';
