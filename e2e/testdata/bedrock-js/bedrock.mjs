// Drives groundhog's Bedrock routes with the AWS SDK for JavaScript v3, as
// a user would: a custom endpoint and the gateway key as the bearer token
// (AWS_BEARER_TOKEN_BEDROCK). Prints one JSON object with what it saw.
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelCommand,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';

const endpoint = process.env.GROUNDHOG_URL;
const modelId = process.env.BEDROCK_MODEL;
const region = 'us-east-1';
// The client defaults to HTTP/2; groundhog does not speak cleartext
// HTTP/2, so on a plain-http endpoint the SDK's HTTP/1.1 handler is used.
const requestHandler = () => new NodeHttpHandler();

// headers adds request headers and records the raw response's headers.
function headers(client, add) {
  const seen = {};
  client.middlewareStack.add(
    (next) => async (args) => {
      Object.assign(args.request.headers, add);
      const out = await next(args);
      Object.assign(seen, out.response.headers);
      return out;
    },
    { step: 'build', name: 'groundhogHeaders' },
  );
  return seen;
}

const messages = [{ role: 'user', content: [{ text: 'Name three rivers of Europe.' }] }];
const result = {};

// Converse twice with Groundhog-Cache: use: the first answer is stored,
// the second is served from groundhog's cache.
{
  const client = new BedrockRuntimeClient({ region, endpoint, requestHandler: requestHandler() });
  const seen = headers(client, { 'groundhog-operation': 'bedrock-js', 'groundhog-cache': 'use' });
  const out = await client.send(new ConverseCommand({ modelId, messages }));
  result.converse = {
    text: out.output.message.content.map((b) => b.text ?? '').join(''),
    stopReason: out.stopReason,
    usage: out.usage,
    status: out.$metadata.httpStatusCode,
    cache: seen['groundhog-cache'] ?? null,
  };
}
{
  const client = new BedrockRuntimeClient({ region, endpoint, requestHandler: requestHandler() });
  const seen = headers(client, { 'groundhog-operation': 'bedrock-js', 'groundhog-cache': 'use' });
  const out = await client.send(new ConverseCommand({ modelId, messages }));
  result.cached = {
    text: out.output.message.content.map((b) => b.text ?? '').join(''),
    usage: out.usage,
    cache: seen['groundhog-cache'] ?? null,
  };
}

// ConverseStream: the SDK decodes the eventstream.
{
  const client = new BedrockRuntimeClient({ region, endpoint, requestHandler: requestHandler() });
  headers(client, { 'groundhog-operation': 'bedrock-js' });
  const out = await client.send(new ConverseStreamCommand({
    modelId,
    messages: [{ role: 'user', content: [{ text: 'Name three rivers of Asia.' }] }],
  }));
  const events = [];
  let text = '';
  let usage = null;
  let stopReason = null;
  for await (const ev of out.stream) {
    const kind = Object.keys(ev).find((k) => ev[k] !== undefined);
    events.push(kind);
    if (ev.contentBlockDelta) text += ev.contentBlockDelta.delta?.text ?? '';
    if (ev.messageStop) stopReason = ev.messageStop.stopReason;
    if (ev.metadata) usage = ev.metadata.usage;
  }
  result.stream = { events, text, stopReason, usage };
}

// The same question as ConverseStream, not streamed: the sim's answer is
// deterministic, so the texts match.
{
  const client = new BedrockRuntimeClient({ region, endpoint, requestHandler: requestHandler() });
  headers(client, { 'groundhog-operation': 'bedrock-js' });
  const out = await client.send(new ConverseCommand({
    modelId,
    messages: [{ role: 'user', content: [{ text: 'Name three rivers of Asia.' }] }],
  }));
  result.streamTwin = out.output.message.content.map((b) => b.text ?? '').join('');
}

// InvokeModel with Anthropic's native body.
{
  const client = new BedrockRuntimeClient({ region, endpoint, requestHandler: requestHandler() });
  headers(client, { 'groundhog-operation': 'bedrock-js' });
  const out = await client.send(new InvokeModelCommand({
    modelId,
    contentType: 'application/json',
    accept: 'application/json',
    body: JSON.stringify({
      anthropic_version: 'bedrock-2023-05-31',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Name three rivers of Africa.' }],
    }),
  }));
  const answer = JSON.parse(new TextDecoder().decode(out.body));
  result.invoke = {
    type: answer.type,
    role: answer.role,
    text: (answer.content ?? []).map((b) => b.text ?? '').join(''),
    stopReason: answer.stop_reason,
    usage: answer.usage,
  };
}

// SigV4: the same SDK with ordinary AWS credentials instead of the bearer
// token is refused.
{
  const client = new BedrockRuntimeClient({
    region,
    endpoint,
    requestHandler: requestHandler(),
    credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
    authSchemePreference: ['sigv4'],
  });
  const seen = headers(client, {});
  try {
    await client.send(new ConverseCommand({ modelId, messages }));
    result.sigv4 = { refused: false };
  } catch (err) {
    result.sigv4 = {
      refused: true,
      name: err.name,
      message: err.message,
      status: err.$metadata?.httpStatusCode ?? null,
    };
  }
}

console.log(JSON.stringify(result));
