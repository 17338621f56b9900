// Runs a plan's steps through a connected TypeScript SDK client: each step
// {code, timeout?} calls run_python and prints one JSON line {text, isError,
// out, ...seen()}, seen returning what the client's handlers saw during the
// step (and forgetting it).
export async function runSteps(client, steps, seen) {
  for (const step of steps) {
    const args = { code: step.code };
    if (step.timeout) args.timeout = step.timeout;
    const r = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 180000 });
    process.stdout.write(JSON.stringify({
      text: r.content.map((c) => c.text ?? "").join(""),
      isError: r.isError === true,
      out: r.structuredContent,
      ...seen(),
    }) + "\n");
  }
}
