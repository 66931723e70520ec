// Shared by the validators: read a JSON array from stdin, answer one JSON result per item on stdout.
export async function eachItem(check) {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const items = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const results = [];
  for (const item of items) {
    try {
      results.push(await check(item));
    } catch (error) {
      results.push({ ok: false, error: String(error && error.message ? error.message : error) });
    }
  }
  process.stdout.write(JSON.stringify(results));
}
