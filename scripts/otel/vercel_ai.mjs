// Runs the Vercel AI SDK offline and writes its OpenTelemetry spans as OTLP JSON lines.
//
// `generateText` and `streamText` with the SDK's mock model (`ai/test`), telemetry enabled
// (`experimental_telemetry`: the SDK's own `ai.*` spans), so nothing leaves the machine. The
// spans are encoded by OpenTelemetry JS's OTLP JSON serializer (`@opentelemetry/otlp-transformer`),
// a few per line in the order they ended, as the Collector's file exporter writes them. The
// runs: a tool call, a tool that throws, an answer cut at the token limit, a 429 the SDK's
// retry recovers, a content-filtered stream.
//
// Usage: node vercel_ai.mjs OUT.jsonl   (with `ai`, `zod`, `@opentelemetry/api`,
// `@opentelemetry/sdk-trace-base`, `@opentelemetry/context-async-hooks` and
// `@opentelemetry/otlp-transformer` installed)

import { writeFileSync } from 'node:fs';
import { APICallError, generateText, stepCountIs, streamText, tool } from 'ai';
import { MockLanguageModelV2, simulateReadableStream } from 'ai/test';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { z } from 'zod';

// Spans nest through the active context, as a Node.js SDK set-up registers it.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
const tracer = provider.getTracer('ai');

const usage = (input, output) => ({
  inputTokens: input,
  outputTokens: output,
  totalTokens: input + output,
});
const text = (t, input, output, finishReason = 'stop') => ({
  content: [{ type: 'text', text: t }],
  finishReason,
  usage: usage(input, output),
  warnings: [],
});
const call = (toolName, args, toolCallId, input, output) => ({
  content: [{ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(args) }],
  finishReason: 'tool-calls',
  usage: usage(input, output),
  warnings: [],
});
// A model answering with the given steps in order (an Error is thrown).
const scripted = (modelId, steps) =>
  new MockLanguageModelV2({
    provider: 'scripted',
    modelId,
    doGenerate: async () => {
      const step = steps.shift();
      if (step instanceof Error) throw step;
      return step;
    },
  });
const telemetry = functionId => ({ isEnabled: true, functionId, tracer });

async function run(name, options) {
  try {
    await generateText({ stopWhen: stepCountIs(5), experimental_telemetry: telemetry(name), ...options });
  } catch (e) {
    console.error(`${name}: ${e.name}: ${e.message}`);
  }
}

await run('forecaster', {
  model: scripted('scripted-large', [
    call('getWeather', { city: 'Oslo' }, 'call-w1', 120, 20),
    text('It is sunny in Oslo.', 160, 12),
  ]),
  prompt: 'Weather in Oslo?',
  tools: {
    getWeather: tool({
      description: 'The weather in a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => `Sunny in ${city}`,
    }),
  },
});
await run('fumbler', {
  model: scripted('scripted-large', [
    call('flakyLookup', { key: 'k1' }, 'call-f1', 90, 15),
    text('The lookup failed.', 130, 9),
  ]),
  prompt: 'Look up k1',
  tools: {
    flakyLookup: tool({
      description: 'A lookup that fails',
      inputSchema: z.object({ key: z.string() }),
      execute: async ({ key }) => {
        throw new Error(`lookup of ${key} failed`);
      },
    }),
  },
});
await run('essayist', {
  model: scripted('scripted-large', [text('Once upon a', 50, 64, 'length')]),
  prompt: 'Write an essay',
});
await run('patient', {
  model: scripted('scripted-large', [
    new APICallError({
      message: 'Rate limit reached',
      url: 'https://api.example.com/v1/chat',
      requestBodyValues: {},
      statusCode: 429,
      isRetryable: true,
    }),
    text('Done after a retry.', 40, 6),
  ]),
  prompt: 'Try again',
  maxRetries: 1,
});

const filtered = streamText({
  model: new MockLanguageModelV2({
    provider: 'scripted',
    modelId: 'scripted-small',
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: 'text-start', id: 't1' },
          { type: 'text-delta', id: 't1', delta: 'I cannot' },
          { type: 'text-end', id: 't1' },
          { type: 'finish', finishReason: 'content-filter', usage: usage(30, 3) },
        ],
      }),
    }),
  }),
  prompt: 'Something unsafe',
  experimental_telemetry: telemetry('censored'),
});
await filtered.consumeStream();

const spans = exporter.getFinishedSpans();
const lines = [];
for (let i = 0; i < spans.length; i += 4) {
  const bytes = JsonTraceSerializer.serializeRequest(spans.slice(i, i + 4));
  lines.push(new TextDecoder().decode(bytes));
}
writeFileSync(process.argv[2], lines.join('\n') + '\n');
