// The TypeScript SDK's Client driving our examples/everything-server.
//
//   node ts-client.mjs --stdio <everything-server binary>
//   node ts-client.mjs --http <url>
//
// Prints the report described in common.mjs; exits 0 even when checks fail
// (interop.sh counts them), non-zero only when it could not run at all.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { CHECK_TIMEOUT_MS, expect, flag, plan, run, show, waitFor } from './common.mjs';

const CHECKS = [
  'initialize', 'tools-list-pages', 'tools-call-echo', 'progress', 'cancel',
  'elicitation-accept', 'elicitation-decline', 'sampling', 'roots', 'logging',
  'resources-list', 'resources-read', 'resource-templates', 'prompts-list', 'prompts-get',
];

// The tools our server registers after the suite's 28 fixtures; the page
// size is 30, so the last six are page 2.
const INTEROP_TOOLS = ['echo', 'progress', 'sleep', 'sleep_stats', 'ask_elicitation', 'ask_sampling', 'ask_roots', 'log', 'sleep_task'];
// The fixtures of the conformance suite's tasks-* scenarios come last.
const TASK_FIXTURES = ['greet', 'slow_compute', 'failing_job', 'protocol_error_job', 'confirm_delete', 'multi_input', 'test_tool_with_task'];
const PAGE_2 = [...INTEROP_TOOLS.slice(2), ...TASK_FIXTURES];

// The form ask_elicitation sends (interopForm in interop.go).
const FORM = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'Your name' },
    count: { type: 'integer', minimum: 0, maximum: 100, description: 'A number from 0 to 100' },
    ok: { type: 'boolean', description: 'Whether all is well' },
  },
  required: ['name'],
};
const ANSWER = { name: 'Ada', count: 7, ok: true };
const ROOTS = [{ uri: 'file:///tmp/ts-interop', name: 'ts-interop' }];

// Tap records every message the client receives, so that checks can see
// what came over the wire.
class Tap {
  constructor(inner) {
    this.inner = inner;
    this.received = [];
    this.sent = [];
    inner.onmessage = (msg, extra) => {
      this.received.push(msg);
      this.onmessage?.(msg, extra);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = err => this.onerror?.(err);
  }
  start() { return this.inner.start(); }
  send(msg, opts) {
    this.sent.push(msg);
    return this.inner.send(msg, opts);
  }
  close() { return this.inner.close(); }
  get sessionId() { return this.inner.sessionId; }
  setProtocolVersion(v) { this.inner.setProtocolVersion?.(v); }
}

// noToolError fails with the tool's own text when the call came back as an error.
function noToolError(res) {
  if (res.isError) throw new Error(`tool error: ${res.content?.map(c => c.text ?? c.type).join(' ')}`);
}

async function main() {
  const argv = process.argv.slice(2);
  const serverBin = flag(argv, '--stdio');
  const url = flag(argv, '--http');
  if (!serverBin && !url) {
    console.error('usage: ts-client.mjs --stdio <server> | --http <url>');
    process.exit(2);
  }
  plan(CHECKS);

  const seen = { elicit: [], sampling: [], logs: [] };
  const client = new Client({ name: 'ts-interop-client', version: '1.0.0' }, {
    capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } },
  });
  client.setRequestHandler(ElicitRequestSchema, req => {
    seen.elicit.push(req.params);
    if (req.params.message.includes('decline')) return { action: 'decline' };
    return { action: 'accept', content: ANSWER };
  });
  client.setRequestHandler(CreateMessageRequestSchema, req => {
    seen.sampling.push(req.params);
    const prompt = req.params.messages[0]?.content?.text ?? '';
    return { model: 'ts-model', role: 'assistant', content: { type: 'text', text: `echo: ${prompt}` }, stopReason: 'endTurn' };
  });
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: ROOTS }));
  client.setNotificationHandler(LoggingMessageNotificationSchema, n => { seen.logs.push(n.params); });

  // The whole environment, not the SDK's safe subset: interop.sh finds the
  // run's processes by a variable in it.
  const inner = serverBin
    ? new StdioClientTransport({ command: serverBin, args: ['-stdio'], env: { ...process.env }, stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(url));
  const tap = new Tap(inner);
  const lateProgress = [];
  client.onerror = err => {
    if (/progress notification for an unknown token/.test(err?.message)) lateProgress.push(err);
    else console.error(`client error: ${err?.message ?? err}`);
  };
  const opts = { timeout: CHECK_TIMEOUT_MS };
  const call = (name, args, more) => client.callTool({ name, arguments: args }, undefined, { ...opts, ...more });

  let connected = false;
  await run('initialize', async () => {
    await client.connect(tap, opts);
    connected = true;
    const init = tap.received.find(m => m.result?.protocolVersion);
    expect('protocolVersion', init?.result.protocolVersion, '2025-11-25');
    expect('serverInfo.name', client.getServerVersion()?.name, 'mcp-go-everything-server');
    const caps = client.getServerCapabilities() ?? {};
    expect('capabilities', ['logging', 'prompts', 'resources', 'tools'].filter(k => caps[k]), ['logging', 'prompts', 'resources', 'tools']);
  });
  if (!connected) {
    for (const name of CHECKS.slice(1)) console.log(`FAIL ${name}: not run: initialize failed`);
    await client.close().catch(() => {});
    return;
  }

  await run('tools-list-pages', async () => {
    const p1 = await client.listTools(undefined, opts);
    expect('page 1 length', p1.tools.length, 30);
    if (!p1.nextCursor) throw new Error('page 1 has no nextCursor');
    const p2 = await client.listTools({ cursor: p1.nextCursor }, opts);
    expect('page 2 names', p2.tools.map(t => t.name), PAGE_2);
    expect('page 2 nextCursor', p2.nextCursor, undefined);
    const names = [...p1.tools, ...p2.tools].map(t => t.name);
    expect('distinct names', new Set(names).size, 30 + PAGE_2.length);
    expect('interop tools listed', INTEROP_TOOLS.filter(n => names.includes(n)), INTEROP_TOOLS);
    const echo = p1.tools.find(t => t.name === 'echo');
    expect('echo input schema', echo?.inputSchema,
      { type: 'object', properties: { text: { type: 'string', description: 'The text to send back.' } }, required: ['text'], additionalProperties: false });
    const stats = p2.tools.find(t => t.name === 'sleep_stats');
    expect('sleep_stats output schema required', stats?.outputSchema?.required, ['started', 'completed', 'cancelled']);
  });

  await run('tools-call-echo', async () => {
    const res = await call('echo', { text: 'héllo, wörld ✓ "quoted"\n' });
    expect('content', res.content, [{ type: 'text', text: 'héllo, wörld ✓ "quoted"\n' }]);
    noToolError(res);
  });

  await run('progress', async () => {
    const got = [];
    const from = tap.received.length;
    lateProgress.length = 0;
    const res = await call('progress', { steps: 3, delayMs: 30 }, { onprogress: p => got.push(p) });
    const want = [1, 2, 3].map(i => ({ progress: i, total: 3, message: `step ${i} of 3` }));
    expect('content', res.content, [{ type: 'text', text: 'completed 3 steps' }]);
    // On the wire: all three, with the call's token, before the response.
    const sent = tap.sent.findLast(m => m.method === 'tools/call' && m.params?.name === 'progress');
    const wire = tap.received.slice(from);
    const respAt = wire.findIndex(m => m.id === sent?.id);
    const before = wire.slice(0, respAt).filter(m => m.method === 'notifications/progress');
    expect('progress on the wire before the response', before.map(m => m.params),
      want.map(p => ({ progressToken: sent?.params?._meta?.progressToken, ...p })));
    // The SDK dispatches notifications a microtask after a response read in
    // the same chunk, so a trailing one can miss onprogress
    // (typescript-sdk#2580); each miss must show up as that error.
    expect('onprogress saw a prefix', got, want.slice(0, got.length));
    if (got.length < 1) throw new Error('onprogress saw nothing');
    await waitFor(() => got.length + lateProgress.length >= 3, 500);
    expect('seen + reported late', got.length + lateProgress.length, 3);
  });

  await run('cancel', async () => {
    const stats = async () => (await call('sleep_stats', {})).structuredContent;
    // The counts are the server process's: compare with the ones before.
    const base = await stats();
    const delta = async () => {
      const now = await stats();
      return { started: now.started - base.started, completed: now.completed - base.completed, cancelled: now.cancelled - base.cancelled };
    };
    const ac = new AbortController();
    const pending = call('sleep', { ms: 30000 }, { signal: ac.signal, timeout: 40000 });
    const outcome = pending.then(r => ({ result: r }), e => ({ error: e }));
    if (!(await waitFor(async () => (await delta()).started === 1, 3000))) throw new Error('sleep never started');
    const t0 = Date.now();
    ac.abort(new Error('interop cancel'));
    const out = await outcome;
    if (out.result) throw new Error(`aborted call resolved: ${show(out.result)}`);
    if (Date.now() - t0 > 1000) throw new Error(`abort took ${Date.now() - t0}ms`);
    await waitFor(async () => (await delta()).cancelled === 1, 3000);
    expect('sleep_stats change after the abort', await delta(), { started: 1, completed: 0, cancelled: 1 });
  });

  await run('elicitation-accept', async () => {
    seen.elicit.length = 0;
    const res = await call('ask_elicitation', { message: 'Tell us about you' });
    noToolError(res);
    expect('result', res.structuredContent, { action: 'accept', content: ANSWER });
    expect('asks seen', seen.elicit.length, 1);
    expect('message', seen.elicit[0].message, 'Tell us about you');
    expect('requestedSchema', seen.elicit[0].requestedSchema, FORM);
  });

  await run('elicitation-decline', async () => {
    seen.elicit.length = 0;
    const res = await call('ask_elicitation', { message: 'Please decline this' });
    noToolError(res);
    expect('result', res.structuredContent, { action: 'decline' });
    expect('asks seen', seen.elicit.length, 1);
  });

  await run('sampling', async () => {
    seen.sampling.length = 0;
    const res = await call('ask_sampling', { prompt: 'What is 2+2?' });
    noToolError(res);
    expect('result', res.structuredContent, { model: 'ts-model', role: 'assistant', text: 'echo: What is 2+2?', stopReason: 'endTurn' });
    expect('asks seen', seen.sampling.length, 1);
    expect('messages', seen.sampling[0].messages, [{ role: 'user', content: { type: 'text', text: 'What is 2+2?' } }]);
    expect('maxTokens', seen.sampling[0].maxTokens, 64);
  });

  await run('roots', async () => {
    const res = await call('ask_roots', {});
    noToolError(res);
    expect('result', res.structuredContent, { roots: ROOTS });
  });

  await run('logging', async () => {
    seen.logs.length = 0;
    await client.setLoggingLevel('warning', opts);
    const below = await call('log', { level: 'info', count: 2 });
    expect('below the level', below.content, [{ type: 'text', text: 'logged 0 of 2' }]);
    const res = await call('log', { level: 'error', count: 3 });
    expect('at the level', res.content, [{ type: 'text', text: 'logged 3 of 3' }]);
    await waitFor(() => seen.logs.length >= 3, 2000);
    expect('notifications/message', seen.logs,
      [1, 2, 3].map(i => ({ level: 'error', logger: 'interop', data: `log ${i}/3` })));
  });

  await run('resources-list', async () => {
    const res = await client.listResources(undefined, opts);
    // The everything-server also lists its skills' files (skill://...).
    expect('skill resources', res.resources.some(r => r.uri === 'skill://pdf-processing/SKILL.md'), true);
    expect('resources', res.resources.filter(r => r.uri.startsWith('test://')).map(r => ({ uri: r.uri, name: r.name, mimeType: r.mimeType })), [
      { uri: 'test://static-text', name: 'static-text', mimeType: 'text/plain' },
      { uri: 'test://static-binary', name: 'static-binary', mimeType: 'image/png' },
      { uri: 'test://watched-resource', name: 'watched-resource', mimeType: 'text/plain' },
    ]);
  });

  await run('resources-read', async () => {
    const text = await client.readResource({ uri: 'test://static-text' }, opts);
    expect('text', text.contents, [{ uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' }]);
    const bin = await client.readResource({ uri: 'test://static-binary' }, opts);
    expect('blob fields', bin.contents.map(c => [c.uri, c.mimeType, typeof c.blob]), [['test://static-binary', 'image/png', 'string']]);
    const png = Buffer.from(bin.contents[0].blob, 'base64');
    expect('blob is a PNG', png.subarray(0, 8).toString('hex'), '89504e470d0a1a0a');
  });

  await run('resource-templates', async () => {
    const res = await client.listResourceTemplates(undefined, opts);
    expect('templates', res.resourceTemplates.map(t => ({ uriTemplate: t.uriTemplate, name: t.name, mimeType: t.mimeType })),
      [{ uriTemplate: 'test://template/{id}/data', name: 'template-data', mimeType: 'application/json' }]);
    const read = await client.readResource({ uri: 'test://template/42/data' }, opts);
    expect('uri', read.contents.map(c => c.uri), ['test://template/42/data']);
    expect('data', JSON.parse(read.contents[0].text), { id: '42', templateTest: true, data: 'Data for ID: 42' });
  });

  await run('prompts-list', async () => {
    const res = await client.listPrompts(undefined, opts);
    expect('names', res.prompts.map(p => p.name), [
      'test_simple_prompt', 'test_prompt_with_arguments', 'test_prompt_with_embedded_resource',
      'test_prompt_with_image', 'test_input_required_result_prompt',
    ]);
    const withArgs = res.prompts.find(p => p.name === 'test_prompt_with_arguments');
    expect('arguments', withArgs.arguments, [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ]);
  });

  await run('prompts-get', async () => {
    const simple = await client.getPrompt({ name: 'test_simple_prompt' }, opts);
    expect('simple', simple.messages, [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }]);
    const args = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'alpha', arg2: 'beta' } }, opts);
    expect('with arguments', args.messages, [{ role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='alpha', arg2='beta'" } }]);
    const emb = await client.getPrompt({ name: 'test_prompt_with_embedded_resource', arguments: { resourceUri: 'test://static-text' } }, opts);
    expect('embedded', emb.messages[0], {
      role: 'user',
      content: { type: 'resource', resource: { uri: 'test://static-text', mimeType: 'text/plain', text: 'Embedded resource content for testing.' } },
    });
  });

  if (url) await inner.terminateSession().catch(err => console.error(`terminateSession: ${err.message}`));
  await client.close();
}

main().then(() => process.exit(0), err => {
  console.error(err);
  process.exit(1);
});
