// The OpenAI Agents SDK as a harness: one agent with a shell function
// tool, run on the prompt in AGENTRL_PROMPT against OPENAI_BASE_URL,
// with the SDK's Responses model ("responses") or its Chat Completions
// model ("chat", the first argument).
import { execSync } from 'node:child_process';
import OpenAI from 'openai';
import { Agent, run, tool, setTracingDisabled, OpenAIResponsesModel, OpenAIChatCompletionsModel } from '@openai/agents';
import { z } from 'zod';

setTracingDisabled(true);
const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY, maxRetries: 0 });
const model = process.argv[2] === 'chat'
  ? new OpenAIChatCompletionsModel(client, 'agentrl')
  : new OpenAIResponsesModel(client, 'agentrl');
const shell = tool({
  name: 'shell',
  description: 'Run a shell command in the working directory and return its output.',
  parameters: z.object({ command: z.string() }),
  execute: async ({ command }) => execSync(command, { encoding: 'utf8' }),
});
const agent = new Agent({ name: 'agent', instructions: 'You are a coding agent. Use the shell tool.', model, tools: [shell] });
const result = await run(agent, process.env.AGENTRL_PROMPT, { maxTurns: 4 });
console.log(result.finalOutput);
