// Shared by the validators: read a JSON array from stdin, answer one JSON result per item on stdout.
// With --serve the process stays up and answers one batch per line (a JSON array in, a JSON array out), so a
// test session loads Mermaid, jsdom and elkjs once rather than once per batch (tests/diagrams/tools.py).
import { createInterface } from "node:readline";

async function answer(items, check) {
  const results = [];
  for (const item of items) {
    try {
      results.push(await check(item));
    } catch (error) {
      results.push({ ok: false, error: String(error && error.message ? error.message : error) });
    }
  }
  return results;
}

export async function eachItem(check) {
  if (process.argv.includes("--serve")) {
    for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
      process.stdout.write(JSON.stringify(await answer(JSON.parse(line), check)) + "\n");
    }
    return;
  }
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  process.stdout.write(JSON.stringify(await answer(JSON.parse(Buffer.concat(chunks).toString("utf8")), check)));
}
