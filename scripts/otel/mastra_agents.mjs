// Runs Mastra agents offline and writes the OTLP its OpenTelemetry exporter sends, as JSON lines.
//
// The agents use the AI SDK's mock model (`ai/test`'s `MockLanguageModelV2`) with scripted
// answers, so nothing leaves the machine. Mastra's tracing (`@mastra/observability`) exports
// through `@mastra/otel-exporter` (its `custom` provider, OTLP/HTTP JSON) to a receiver on
// loopback started here, which appends each request body (an `ExportTraceServiceRequest`,
// the shape of the Collector's file exporter lines) to OUT.jsonl. The runs: a tool call, a tool
// that throws, an answer cut at the token limit, a 429 the AI SDK's retry recovers, a 500 that
// ends the run, a subagent run inside a tool.
//
// Usage: node mastra_agents.mjs OUT.jsonl EXPECTED.json   (with `@mastra/core`,
// `@mastra/observability`, `@mastra/otel-exporter`, `@opentelemetry/exporter-trace-otlp-http`,
// `ai` 5 and `zod` installed)

import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';
import { APICallError } from 'ai';
import { MockLanguageModelV2 } from 'ai/test';
import { z } from 'zod';

const [out, expectedPath] = process.argv.slice(2);
writeFileSync(out, '');

// The OTLP/HTTP receiver: each request body is one line.
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    appendFileSync(out, JSON.stringify(JSON.parse(body)) + '\n');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const endpoint = `http://127.0.0.1:${server.address().port}/v1/traces`;

const usage = (input, output) => ({ inputTokens: input, outputTokens: output, totalTokens: input + output });
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
const httpError = (status) =>
  new APICallError({
    message: `provider error ${status}`,
    url: 'https://api.invalid/v1/chat/completions',
    requestBodyValues: {},
    statusCode: status,
    responseBody: `{"error":{"message":"provider error ${status}"}}`,
    isRetryable: status === 429,
  });
// A model answering with the given steps in order (an Error is thrown).
const scripted = (steps) =>
  new MockLanguageModelV2({
    provider: 'scripted',
    modelId: 'scripted-large',
    doGenerate: async () => {
      const step = steps.shift();
      if (step instanceof Error) throw step;
      return step;
    },
  });

const expected = { turns: [], model_calls: [], errors: [], tool_calls: [] };
const expectTurn = (agent, state, finish_reason, model_calls, input_tokens, output_tokens, session = 'root') =>
  expected.turns.push({ agent, session, state, finish_reason, model_calls, input_tokens, output_tokens });
const expectError = (agent, source, code, http_status, retried, recovered) =>
  expected.errors.push({ agent, source, code, http_status, retried, recovered });
const expectTool = (name, call_id, status) => expected.tool_calls.push({ name, call_id, status });

const getWeather = createTool({
  id: 'get_weather',
  description: 'The weather in a city.',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `Sunny in ${city}`,
});
const lookup = createTool({
  id: 'lookup',
  description: 'A lookup that fails.',
  inputSchema: z.object({ key: z.string() }),
  execute: async ({ key }) => {
    throw new Error(`lookup of ${key} failed`);
  },
});
const research = createTool({
  id: 'research',
  description: 'Asks the researcher agent.',
  inputSchema: z.object({ topic: z.string() }),
  // The tool's tracing context, passed on, puts the researcher's run inside the tool's span.
  execute: async ({ topic }, context) => {
    const r = await mastra
      .getAgent('researcher')
      .generate(`Research ${topic}`, { tracingContext: context?.tracingContext });
    return r.text;
  },
});

const agent = (name, steps, tools = {}) =>
  new Agent({ id: name, name, instructions: `You are ${name}.`, model: scripted(steps), tools });

const agents = {
  forecaster: agent(
    'forecaster',
    [call('get_weather', { city: 'Oslo' }, 'call_w1', 120, 20), text('It is sunny in Oslo.', 160, 12)],
    { get_weather: getWeather },
  ),
  fumbler: agent(
    'fumbler',
    [call('lookup', { key: 'k1' }, 'call_f1', 90, 15), text('The lookup failed.', 130, 9)],
    { lookup },
  ),
  essayist: agent('essayist', [text('Once upon a', 50, 64, 'length')]),
  patient: agent('patient', [httpError(429), text('Done after a retry.', 40, 6)]),
  doomed: agent('doomed', [httpError(500)]),
  researcher: agent('researcher', [text('Notes on otters', 30, 8)]),
  lead: agent(
    'lead',
    [call('research', { topic: 'otters' }, 'call_r1', 100, 18), text('Otters are playful.', 150, 10)],
    { research },
  ),
};

const exporter = new OtelExporter({ provider: { custom: { endpoint, protocol: 'http/json' } } });
const mastra = new Mastra({
  agents,
  observability: new Observability({
    configs: { otel: { serviceName: 'mastra-agents', exporters: [exporter] } },
  }),
});

async function run(name, prompt, options = {}) {
  try {
    await mastra.getAgent(name).generate(prompt, { maxSteps: 3, ...options });
  } catch (e) {
    console.error(`${name}: ${e.name}: ${e.message}`); // the run's failure is in its spans
  }
}

await run('forecaster', 'Weather in Oslo?');
expectTurn('forecaster', 'Completed', 'completed', 2, 280, 32);
expectTool('get_weather', 'call_w1', 'ok');

await run('fumbler', 'Look up k1');
expectTurn('fumbler', 'Completed', 'completed', 2, 220, 24);
expectTool('lookup', 'call_f1', 'error');

await run('essayist', 'Write an essay');
expectTurn('essayist', 'Completed', 'max_tokens', 1, 50, 64);

await run('patient', 'Try again', { modelSettings: { maxRetries: 2 } });
expectTurn('patient', 'Completed', 'completed', 1, 40, 6);

// Mastra's exporter leaves the model call span OK (finish reason `error`) and records the
// agent run's failure as `error.type: unknown` and the error's message: the HTTP status is lost.
await run('doomed', 'Anything', { modelSettings: { maxRetries: 0 } });
expectTurn('doomed', 'Failed', 'error', 1, 0, 0);
expectError('doomed', 'turn', 'unknown', null, null, null);

await run('lead', 'Tell me about otters');
expectTurn('lead', 'Completed', 'completed', 2, 250, 28);
expectTurn('researcher', 'Completed', 'completed', 1, 30, 8, 'subagent');
expectTool('research', 'call_r1', 'ok');

await mastra.shutdown?.();
await exporter.shutdown?.();
server.close();
writeFileSync(expectedPath, JSON.stringify(expected, null, 2) + '\n');
