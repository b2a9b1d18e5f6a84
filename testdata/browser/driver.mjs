// The MCP Apps browser tests' driver (apps_browser_test.go). One job per
// run, given as JSON in argv[3]; it prints one JSON line with the outcome.
//
//   example-server         serve the official basic example server
//                          (@modelcontextprotocol/server-basic-vanillajs) on
//                          127.0.0.1, print {"url"}, stop when stdin closes
//   page   {url, steps}    open a host page in Chromium and run the steps
//   bridge {server, tool, args, steps}
//                          host a view of the MCP server at server with the
//                          official AppBridge, in a page of this driver, and
//                          run the steps
//
// Steps: {frame|host: selector, match: regexp, differs?: true} waits for the
// element's text (in the view's frame or the host page) to match (and to
// differ from the text an earlier step read of the same element); {click: selector} clicks in the frame;
// {type: selector, text} types text into a field of the frame;
// {goto: url} opens another page (relative to the current one);
// {screenshot: path, clip?: {x, y, width, height}}. Chromium is Debian's (CHROMIUM, else
// /usr/bin/chromium), headless, on a fresh profile, with no network beyond
// loopback; nothing here downloads a browser.
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const [, , mode, arg] = process.argv;
const job = arg ? JSON.parse(arg) : {};
const timeout = job.timeoutMs ?? 20000;

function out(v) { process.stdout.write(JSON.stringify(v) + "\n"); }

// stdinClosed resolves when the test closes our stdin: time to go.
const stdinClosed = new Promise((resolve) => {
  process.stdin.on("end", resolve);
  process.stdin.on("close", resolve);
  process.stdin.resume();
});

async function exampleServer() {
  const { createServer } = await import("@modelcontextprotocol/server-basic-vanillajs");
  const { NodeStreamableHTTPServerTransport } = await import("@modelcontextprotocol/node");
  const srv = http.createServer(async (req, res) => {
    if (new URL(req.url, "http://x").pathname !== "/mcp") { res.writeHead(404).end(); return; }
    const server = createServer(); // stateless: one server a request
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => { transport.close().catch(() => {}); server.close().catch(() => {}); });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    }
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  out({ url: `http://127.0.0.1:${srv.address().port}/mcp` });
  await stdinClosed;
  srv.closeAllConnections();
  srv.close();
}

async function launch() {
  const puppeteer = (await import("puppeteer-core")).default;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "mcp-apps-chromium-"));
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    pipe: true,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      `--user-data-dir=${profile}`, "--window-size=900,700",
    ],
    defaultViewport: { width: 900, height: 700 },
  });
  return {
    browser,
    async close() {
      await browser.close().catch(() => {});
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

// runSteps runs the steps on page; the view is the page's first iframe.
async function runSteps(page, steps, log) {
  const texts = [];
  const last = new Map(); // the last text read of each element

  const frame = async () => {
    const el = await page.waitForSelector("iframe", { timeout });
    for (let i = 0; i < 100; i++) {
      const f = await el.contentFrame();
      if (f && f.url() !== "about:blank") return f;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the view's frame never loaded");
  };
  for (const step of steps) {
    if (step.frame || step.host) {
      const where = step.frame ? await frame() : page;
      const sel = step.frame || step.host;
      const re = step.match;
      const key = (step.frame ? "frame " : "host ") + sel;
      const before = last.get(key) ?? null;
      try {
        await where.waitForFunction((sel, re, differs, before) => {
          const el = document.querySelector(sel);
          const t = el ? el.textContent.trim() : null;
          return t !== null && new RegExp(re).test(t) && (!differs || t !== before);
        }, { timeout, polling: 50 }, sel, re, !!step.differs, before);
      } catch (e) {
        const now = await where.evaluate((sel) => document.querySelector(sel)?.textContent ?? null, sel).catch(() => null);
        throw new Error(`waiting for ${sel} to match /${re}/${step.differs ? " and change" : ""}: ${e.message}; its text: ${JSON.stringify(now)}`);
      }
      const now = await where.evaluate((sel) => document.querySelector(sel).textContent.trim(), sel);
      last.set(key, now);
      texts.push(now);
    } else if (step.goto) {
      await page.goto(new URL(step.goto, page.url()).href, { timeout });
      last.clear();
    } else if (step.type) {
      const f = await frame();
      await f.click(step.type, { count: 3 });
      await f.type(step.type, step.text);
    } else if (step.click) {
      await (await frame()).click(step.click);
    } else if (step.screenshot) {
      await page.screenshot({ path: step.screenshot, clip: step.clip });
    }
  }
  return texts;
}

async function withPage(fn) {
  const { browser, close } = await launch();
  const log = [];
  try {
    const page = await browser.newPage();
    page.on("console", (m) => log.push(`${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => log.push(`pageerror: ${e.message}`));
    const texts = await fn(page, log);
    out({ ok: true, texts, console: log });
  } catch (e) {
    out({ ok: false, error: String(e.message || e), console: log });
  } finally {
    await close();
  }
}

async function pageJob() {
  await withPage(async (page, log) => {
    await page.goto(job.url, { timeout });
    return runSteps(page, job.steps || [], log);
  });
}

// cspOf builds the view's Content-Security-Policy from its _meta.ui.csp the
// way the extension describes; the restrictive default without one.
function cspOf(csp) {
  if (!csp) {
    return "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'none'; form-action 'none'";
  }
  const r = (csp.resourceDomains || []).join(" ");
  return [
    "default-src 'none'", `script-src 'self' 'unsafe-inline' ${r}`, `style-src 'self' 'unsafe-inline' ${r}`,
    `img-src 'self' data: ${r}`, `font-src 'self' ${r}`, `media-src 'self' data: ${r}`,
    `connect-src ${(csp.connectDomains || []).join(" ") || "'none'"}`,
    `frame-src ${(csp.frameDomains || []).join(" ") || "'none'"}`, "object-src 'none'",
    `base-uri ${(csp.baseUriDomains || []).join(" ") || "'self'"}`, "form-action 'none'",
  ].join("; ");
}

async function bridgeJob() {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const esbuild = await import("esbuild");
  const client = new Client({ name: "apps-bridge-test-host", version: "1.0.0" }, {
    capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(job.server)));
  let srv;
  try {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === job.tool);
    if (!tool) throw new Error(`no tool ${job.tool}`);
    const uri = tool._meta?.ui?.resourceUri ?? tool._meta?.["ui/resourceUri"];
    const read = await client.readResource({ uri });
    const content = read.contents.find((c) => c.uri === uri) ?? read.contents[0];
    const html = content.text ?? Buffer.from(content.blob, "base64").toString("utf8");
    const bundle = await esbuild.build({
      stdin: { contents: 'export { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";', resolveDir: here },
      bundle: true, format: "esm", platform: "browser", write: false, logLevel: "silent",
    });
    const files = {
      "/": ["text/html", fs.readFileSync(path.join(here, "bridge-host.html"))],
      "/bridge.js": ["text/javascript", bundle.outputFiles[0].contents],
      "/view": ["text/html", html, cspOf(content._meta?.ui?.csp) + "; sandbox allow-scripts allow-forms"],
    };
    srv = http.createServer((req, res) => {
      const f = files[new URL(req.url, "http://x").pathname];
      if (!f) { res.writeHead(404).end(); return; }
      const h = { "Content-Type": f[0], "Cache-Control": "no-store" };
      if (f[2]) h["Content-Security-Policy"] = f[2];
      res.writeHead(200, h).end(f[1]);
    });
    await new Promise((r) => srv.listen(0, "127.0.0.1", r));
    await withPage(async (page, log) => {
      // The page's bridge reaches the server through this client.
      await page.exposeFunction("hostCall", async (method, params) => {
        if (method === "tools/call") {
          const called = tools.find((t) => t.name === params.name);
          const vis = called?._meta?.ui?.visibility ?? ["model", "app"];
          if (params.name !== job.tool && !vis.includes("app")) throw new Error(`tool ${params.name} is not visible to apps`);
          return client.callTool(params);
        }
        if (method === "resources/read") return client.readResource(params);
        throw new Error(`no ${method}`);
      });
      const q = new URLSearchParams({ tool: job.tool, args: JSON.stringify(job.args || {}) });
      await page.goto(`http://127.0.0.1:${srv.address().port}/?${q}`, { timeout });
      return runSteps(page, job.steps || [], log);
    });
  } finally {
    srv?.closeAllConnections();
    srv?.close();
    await client.close().catch(() => {});
  }
}

const jobs = { "example-server": exampleServer, page: pageJob, bridge: bridgeJob };
if (!jobs[mode]) {
  out({ ok: false, error: `unknown mode ${mode}` });
  process.exit(2);
}
jobs[mode]().then(() => process.exit(0), (e) => {
  out({ ok: false, error: String(e.stack || e) });
  process.exit(1);
});
