// Answers codebridge's confirmations as the official MCP TypeScript SDK's
// client does for a person. argv: the codebridge binary, then a JSON plan
// {elicitation, answers, steps}. With elicitation true the client declares
// the capability and answers each elicitation/create with the next of
// answers: an ElicitResult ({action, content?}), or "silent" (never
// answered). Each step {code, timeout?} calls run_python and prints one
// JSON line {text, isError, out, asked}, asked being the elicitation
// requests seen during the step ({message, requestedSchema}).
import { createRequire } from "node:module";
import path from "node:path";
import { runSteps } from "./ts_steps.mjs";

const require = createRequire(path.join(process.env.CODEBRIDGE_TEST_NPM_CLIENTS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

const plan = JSON.parse(process.argv[3]);
const transport = new StdioClientTransport({ command: process.argv[2], args: [], env: process.env, stderr: "inherit" });
const client = new Client({ name: "codebridge-ts-confirm", version: "1.0.0" },
  { capabilities: plan.elicitation ? { elicitation: {} } : {} });
let asked = [];
if (plan.elicitation) {
  const answers = [...plan.answers];
  client.setRequestHandler(ElicitRequestSchema, (req) => {
    asked.push({ message: req.params.message, requestedSchema: req.params.requestedSchema });
    const answer = answers.shift();
    if (answer === undefined) throw new Error("the test gave no answer for this question");
    if (answer === "silent") return new Promise(() => {});
    return answer;
  });
}
await client.connect(transport);
await runSteps(client, plan.steps, () => {
  const seen = { asked };
  asked = [];
  return seen;
});
await client.close();
process.exit(0);
