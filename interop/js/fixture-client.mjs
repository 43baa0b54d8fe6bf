// Drives a server with the official TypeScript MCP client SDK and prints what it saw as
// one JSON line. Usage: node client.mjs <http|sse> <url>
// Used by tests/tests/http_ts_sdk.rs; exits non-zero (with the error on stderr) on failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [mode, url] = process.argv.slice(2);
const transport =
  mode === 'sse'
    ? new SSEClientTransport(new URL(url))
    : new StreamableHTTPClientTransport(new URL(url));
const client = new Client(
  { name: 'ts-sdk-interop', version: '1.0.0' },
  { capabilities: { elicitation: {} } }
);
const questions = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  questions.push(request.params.message);
  return { action: 'accept', content: { approve: true } };
});

await client.connect(transport);
const out = {
  protocolVersion: transport.protocolVersion ?? null,
  sessionId: transport.sessionId ?? null,
  server: client.getServerVersion(),
};
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.sum = (await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })).content[0].text;
const progress = [];
const done = await client.callTool({ name: 'progress', arguments: {} }, undefined, {
  onprogress: (p) => progress.push(p.progress),
});
out.progress = progress;
out.progressResult = done.content[0].text;
out.spend = (await client.callTool({ name: 'spend', arguments: {} })).content[0].text;
out.questions = questions;
out.resource = (await client.readResource({ uri: 'test://static' })).contents[0].text;
out.ping = await client.ping();
if (typeof transport.terminateSession === 'function') {
  await transport.terminateSession();
  out.terminated = true;
}
await client.close();
console.log(JSON.stringify(out));
