// Drives groundhog's Gemini routes with the Google Gen AI SDK for
// JavaScript (@google/genai), as a user would: the gateway key as apiKey
// and groundhog's URL as httpOptions.baseUrl. Prints one JSON object with
// what it saw.
import { GoogleGenAI } from '@google/genai';

const baseUrl = process.env.GROUNDHOG_URL;
const model = process.env.GEMINI_MODEL;
const op = { 'groundhog-operation': 'gemini-js' };
const ai = new GoogleGenAI({ apiKey: process.env.GROUNDHOG_KEY, httpOptions: { baseUrl, headers: op } });
const useCache = { httpOptions: { headers: { ...op, 'groundhog-cache': 'use' } } };

// header reads a response header the SDK kept (sdkHttpResponse).
const header = (res, name) => res.sdkHttpResponse?.headers?.[name] ?? null;
const result = {};

// generateContent twice with Groundhog-Cache: use: the first answer is
// stored, the second is served from groundhog's cache.
const contents = 'Name three rivers of Europe.';
{
  const res = await ai.models.generateContent({ model, contents, config: useCache });
  result.generate = {
    text: res.text,
    finishReason: res.candidates?.[0]?.finishReason ?? null,
    usage: res.usageMetadata,
    cache: header(res, 'groundhog-cache'),
  };
}
{
  const res = await ai.models.generateContent({ model, contents, config: useCache });
  result.cached = { text: res.text, usage: res.usageMetadata, cache: header(res, 'groundhog-cache') };
}

// generateContentStream: the SDK decodes the SSE chunks.
{
  const stream = await ai.models.generateContentStream({ model, contents: 'Name three rivers of Asia.' });
  let text = '';
  let chunks = 0;
  let usage = null;
  let finishReason = null;
  for await (const chunk of stream) {
    chunks++;
    text += chunk.text ?? '';
    if (chunk.usageMetadata) usage = chunk.usageMetadata;
    finishReason = chunk.candidates?.[0]?.finishReason ?? finishReason;
  }
  result.stream = { chunks, text, usage, finishReason };
  const twin = await ai.models.generateContent({ model, contents: 'Name three rivers of Asia.' });
  result.streamTwin = twin.text;
}

// countTokens passes through to the provider.
{
  const res = await ai.models.countTokens({ model, contents: 'Name three rivers of Africa.' });
  result.countTokens = { totalTokens: res.totalTokens };
}

// A key groundhog does not know is refused before the provider.
{
  const bad = new GoogleGenAI({ apiKey: 'not-a-groundhog-key', httpOptions: { baseUrl, headers: op } });
  try {
    await bad.models.generateContent({ model, contents });
    result.badKey = { refused: false };
  } catch (e) {
    result.badKey = { refused: true, status: e.status ?? null, message: String(e.message ?? e) };
  }
}

console.log(JSON.stringify(result));
