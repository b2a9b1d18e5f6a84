// A TypeScript SDK McpServer for our client to drive.
//
//   node ts-server.mjs --stdio
//   node ts-server.mjs --http 127.0.0.1:0   # prints "serving MCP at <url>" on stderr
//
// Its tools: echo, progress, slow (for cancellation) with slow_stats,
// ask_elicitation, ask_sampling, ask_roots and log; two resources, a
// template and two prompts. The asks ride the stream of the call that made
// them (relatedRequestId); log messages go out unrelated, as
// sendLoggingMessage sends them.

import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { flag } from './common.mjs';

// slowStats counts the slow calls of this process.
const slowStats = { started: 0, completed: 0, aborted: 0, lastReason: '' };

const FORM = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'Your name' },
    count: { type: 'integer', minimum: 0, maximum: 100 },
    ok: { type: 'boolean' },
  },
  required: ['name'],
};

const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => {
    clearTimeout(t);
    reject(signal.reason ?? new Error('aborted'));
  }, { once: true });
});

const text = s => ({ content: [{ type: 'text', text: s }] });
const structured = obj => ({ content: [{ type: 'text', text: JSON.stringify(obj) }], structuredContent: obj });

function newServer() {
  const server = new McpServer({ name: 'ts-interop-server', version: '1.0.0' }, { capabilities: { logging: {} } });
  const related = extra => ({ relatedRequestId: extra.requestId, timeout: 10000 });

  server.registerTool('echo', { description: 'Returns its text.', inputSchema: { text: z.string() } },
    async ({ text: t }) => text(t));

  server.registerTool('progress', {
    description: 'Reports progress 1..steps of steps, one step every delayMs.',
    inputSchema: { steps: z.number().int().min(1).max(100), delayMs: z.number().int().min(0).max(10000).optional() },
  }, async ({ steps, delayMs = 10 }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      await sleep(delayMs, extra.signal);
      if (token !== undefined) {
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: i, total: steps, message: `step ${i} of ${steps}` },
        });
      }
    }
    return text(`completed ${steps} steps`);
  });

  server.registerTool('slow', {
    description: 'Reports progress 0 ("started"), then waits ms milliseconds unless cancelled.',
    inputSchema: { ms: z.number().int().min(0) },
  }, async ({ ms }, extra) => {
    slowStats.started++;
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 0, message: 'started' } });
    }
    try {
      await sleep(ms, extra.signal);
    } catch (err) {
      slowStats.aborted++;
      slowStats.lastReason = String(err?.message ?? err);
      throw err;
    }
    slowStats.completed++;
    return text(`slept ${ms}ms`);
  });

  server.registerTool('slow_stats', {
    description: 'Counts the slow calls of this process.',
    outputSchema: { started: z.number(), completed: z.number(), aborted: z.number(), lastReason: z.string() },
  }, async () => structured({ ...slowStats }));

  server.registerTool('ask_elicitation', {
    description: 'Asks the user for a name, a count and a yes/no.',
    inputSchema: { message: z.string() },
    outputSchema: { action: z.string(), content: z.record(z.string(), z.any()).optional() },
  }, async ({ message }, extra) => {
    const r = await server.server.elicitInput({ mode: 'form', message, requestedSchema: FORM }, related(extra));
    return structured(r.content ? { action: r.action, content: r.content } : { action: r.action });
  });

  server.registerTool('ask_sampling', {
    description: "Asks the client's model to answer the prompt.",
    inputSchema: { prompt: z.string() },
    outputSchema: { model: z.string(), role: z.string(), text: z.string(), stopReason: z.string().optional() },
  }, async ({ prompt }, extra) => {
    const r = await server.server.createMessage({
      messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
      systemPrompt: 'Answer in one word.',
      maxTokens: 64,
    }, related(extra));
    const content = Array.isArray(r.content) ? r.content[0] : r.content;
    return structured({ model: r.model, role: r.role, text: content?.text ?? '', stopReason: r.stopReason });
  });

  server.registerTool('ask_roots', {
    description: "Returns the client's roots.",
    outputSchema: { roots: z.array(z.object({ uri: z.string(), name: z.string().optional() })) },
  }, async extra => {
    const r = await server.server.listRoots(undefined, related(extra));
    return structured({ roots: r.roots });
  });

  server.registerTool('log', {
    description: "Sends one log message per level given, as far as the client's log level lets them through.",
    inputSchema: { levels: z.array(z.enum(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'])) },
  }, async ({ levels }, extra) => {
    for (const level of levels) {
      await server.sendLoggingMessage({ level, logger: 'ts-interop', data: `message at ${level}` }, extra.sessionId);
    }
    return text(`offered ${levels.length}`);
  });

  server.registerResource('greeting', 'ts://static/greeting',
    { description: 'A static greeting.', mimeType: 'text/plain' },
    async uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Hello from the TypeScript server.' }] }));

  server.registerResource('bytes', 'ts://static/bytes',
    { description: 'Six bytes.', mimeType: 'application/octet-stream' },
    async uri => ({ contents: [{ uri: uri.href, mimeType: 'application/octet-stream', blob: Buffer.from([0, 1, 2, 253, 254, 255]).toString('base64') }] }));

  server.registerResource('item', new ResourceTemplate('ts://items/{id}', { list: undefined }),
    { description: 'An item by id.', mimeType: 'application/json' },
    async (uri, { id }) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, kind: 'item' }) }] }));

  server.registerPrompt('greet', { description: 'Greets someone.', argsSchema: { name: z.string().describe('Who to greet') } },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Please greet ${name} warmly.` } }] }));

  server.registerPrompt('plain', { description: 'A prompt without arguments.' },
    () => ({ messages: [{ role: 'assistant', content: { type: 'text', text: 'A prompt without arguments.' } }] }));

  return server;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', c => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function jsonError(res, status, code, message) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

// serveHTTP serves one McpServer per session, the way the SDK's own
// examples do: a session starts with a POSTed initialize.
async function serveHTTP(addr) {
  const [host, port] = addr.split(':');
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      if (new URL(req.url, 'http://localhost').pathname !== '/mcp') return jsonError(res, 404, -32601, 'Not found');
      const sid = req.headers['mcp-session-id'];
      let body;
      if (req.method === 'POST') {
        try {
          body = JSON.parse(await readBody(req));
        } catch {
          return jsonError(res, 400, -32700, 'Parse error');
        }
      }
      let transport = sid ? sessions.get(sid) : undefined;
      if (sid && !transport) return jsonError(res, 404, -32001, 'Session not found');
      if (!transport) {
        if (req.method !== 'POST' || !isInitializeRequest(body)) {
          return jsonError(res, 400, -32000, 'Bad Request: No valid session ID provided');
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: id => sessions.set(id, transport),
        });
        transport.onclose = () => sessions.delete(transport.sessionId);
        await newServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (err) {
      console.error(`ts-server: ${err?.stack ?? err}`);
      if (!res.headersSent) jsonError(res, 500, -32603, 'Internal error');
    }
  });
  await new Promise((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(Number(port), host, resolve);
  });
  const a = httpServer.address();
  console.error(`ts-server: serving MCP at http://${a.address}:${a.port}/mcp`);
  const stop = () => {
    for (const t of sessions.values()) t.close().catch(() => {});
    httpServer.close(() => process.exit(0));
    httpServer.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const argv = process.argv.slice(2);
if (argv.includes('--stdio')) {
  const transport = new StdioServerTransport();
  transport.onclose = () => process.exit(0);
  process.stdin.on('end', () => process.exit(0));
  await newServer().connect(transport);
} else if (flag(argv, '--http')) {
  await serveHTTP(flag(argv, '--http'));
} else {
  console.error('usage: ts-server.mjs --stdio | --http host:port');
  process.exit(2);
}
