import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';

const client = new OpenAI({
  baseURL: process.env.GROUNDHOG_URL + '/v1',
  apiKey: 'unused-in-keyless-mode',
  defaultHeaders: { 'Groundhog-Operation': 'agents-sdk' },
});
setDefaultOpenAIClient(client);
setTracingDisabled(true);

const lookup = tool({
  name: 'lookup_order',
  description: 'Look up an order by id',
  parameters: z.object({ id: z.string() }),
  execute: async ({ id }) => `order ${id}: shipped`,
});
const agent = new Agent({ name: 'support', instructions: 'You are a support agent.', model: 'sim-small', tools: [lookup] });
const result = await run(agent, 'Use the tool to look up order 1042.', { stream: true });
let events = 0;
for await (const ev of result) { events++; }
await result.completed;
const items = result.newItems.map((i) => i.type);
console.log(JSON.stringify({ events, items, final: result.finalOutput, usage: result.state.usage }));
