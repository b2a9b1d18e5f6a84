// Checks our server's MCP Apps wire with the @modelcontextprotocol/ext-apps
// package's own zod schemas (and the core SDK's for the results around
// them). apps_schema_test.go writes, on standard input, one JSON object:
// {"capabilities": what our host declares, "initialize", "toolsList",
// "resourcesList", "resourceRead": results our server wrote}. It prints
// "ok" or exits 1 saying what the schemas refused or dropped.
import { isDeepStrictEqual } from "node:util";
import {
  McpUiResourceMetaSchema,
  McpUiToolMetaSchema,
  RESOURCE_MIME_TYPE,
  RESOURCE_URI_META_KEY,
} from "@modelcontextprotocol/ext-apps";
import { EXTENSION_ID, getUiCapability } from "@modelcontextprotocol/ext-apps/server";
import {
  ListResourcesResultSchema,
  ListToolsResultSchema,
  ReadResourceResultSchema,
} from "@modelcontextprotocol/core";

const problems = [];

// strict parses value with schema and insists that nothing was dropped:
// the schemas strip members they do not know, which would hide a member
// we misnamed.
function strict(what, schema, value) {
  const r = schema.safeParse(value);
  if (!r.success) {
    problems.push(`${what}: ${r.error.message}`);
  } else if (!isDeepStrictEqual(r.data, value)) {
    problems.push(`${what}: the schema dropped or changed members: ${JSON.stringify(value)} became ${JSON.stringify(r.data)}`);
  }
  return value;
}

function valid(what, schema, value) {
  const r = schema.safeParse(value);
  if (!r.success) problems.push(`${what}: ${r.error.message}`);
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const wire = JSON.parse(input);

// The host's declaration, as getUiCapability reads it.
const cap = getUiCapability(wire.capabilities);
if (!cap?.mimeTypes?.includes(RESOURCE_MIME_TYPE)) {
  problems.push(`getUiCapability(${JSON.stringify(wire.capabilities)}) = ${JSON.stringify(cap)}: no ${RESOURCE_MIME_TYPE}`);
}
if (!wire.initialize?.capabilities?.extensions?.[EXTENSION_ID]) {
  problems.push(`the server's capabilities do not declare ${EXTENSION_ID}`);
}

valid("tools/list", ListToolsResultSchema, wire.toolsList);
for (const tool of wire.toolsList.tools) {
  const ui = strict(`tool ${tool.name}: _meta.ui`, McpUiToolMetaSchema, tool._meta?.ui);
  if (tool._meta?.[RESOURCE_URI_META_KEY] !== ui?.resourceUri) {
    problems.push(`tool ${tool.name}: _meta["${RESOURCE_URI_META_KEY}"] is not _meta.ui.resourceUri`);
  }
}

valid("resources/list", ListResourcesResultSchema, wire.resourcesList);
for (const r of wire.resourcesList.resources) {
  if (r.mimeType !== RESOURCE_MIME_TYPE) problems.push(`resource ${r.uri}: mimeType ${r.mimeType}`);
  strict(`resource ${r.uri}: _meta.ui`, McpUiResourceMetaSchema, r._meta?.ui);
}

valid("resources/read", ReadResourceResultSchema, wire.resourceRead);
for (const c of wire.resourceRead.contents) {
  if (c.mimeType !== RESOURCE_MIME_TYPE) problems.push(`contents ${c.uri}: mimeType ${c.mimeType}`);
  if (!c.uri.startsWith("ui://") || typeof c.text !== "string") problems.push(`contents ${c.uri}: not a ui:// text`);
  strict(`contents ${c.uri}: _meta.ui`, McpUiResourceMetaSchema, c._meta?.ui);
}

if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log("ok");
