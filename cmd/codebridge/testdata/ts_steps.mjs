// Runs a plan's steps through a connected TypeScript SDK client: each step
// {code, timeout?, reset?} calls run_python and prints one JSON line {text,
// isError, out, ...seen()}, seen returning what the client's handlers saw
// during the step (and forgetting it); {pause: true} prints {"paused": true}
// and waits for a line on stdin (the Go test looks at containers meanwhile).
import readline from "node:readline";

let lines;

export async function runSteps(client, steps, seen) {
  for (const step of steps) {
    if (step.pause) {
      lines ??= readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
      process.stdout.write(JSON.stringify({ paused: true }) + "\n");
      await lines.next();
      continue;
    }
    const args = { code: step.code };
    if (step.timeout) args.timeout = step.timeout;
    if (step.reset) args.reset = true;
    const r = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 180000 });
    process.stdout.write(JSON.stringify({
      text: r.content.map((c) => c.text ?? "").join(""),
      isError: r.isError === true,
      out: r.structuredContent,
      ...seen(),
    }) + "\n");
  }
}
