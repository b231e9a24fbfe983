// The embedding application's backend for the CopilotKit page: CopilotKit's runtime, forwarding the
// page's runs to Waypoint with the API key (which never reaches the browser), and the page's files.
// docs/ag-ui.md shows the runtime part; e2e/test_copilotkit.py starts it:
//
//   WAYPOINT_URL=… WAYPOINT_API_KEY=… WAYPOINT_ASSISTANT_ID=… PORT=… PAGE_DIR=… node e2e/copilotkit/runtime.mjs

import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
// "ag-ui-client-copilotkit" is e2e/package.json's alias of @ag-ui/client 0.0.59; docs/ag-ui.md says "@ag-ui/client".
// --- as in docs/ag-ui.md
import { HttpAgent } from "ag-ui-client-copilotkit"; // 0.0.59: the @ag-ui/client CopilotKit pins
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";

const support = new HttpAgent({
  url: `${process.env.WAYPOINT_URL}/v1/ag-ui/${process.env.WAYPOINT_ASSISTANT_ID}`,
  headers: { Authorization: `Bearer ${process.env.WAYPOINT_API_KEY}` },
});

const copilotkit = createCopilotNodeListener({
  runtime: new CopilotRuntime({ agents: { support } }),
  basePath: "/api/copilotkit",
});
// --- end

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf" };

createServer(async (request, response) => {
  if (request.url.startsWith("/api/copilotkit")) return copilotkit(request, response);
  const path = normalize(decodeURIComponent(new URL(request.url, "http://page").pathname)).replace(/^\/+/, "") || "index.html";
  try {
    const body = await readFile(join(process.env.PAGE_DIR, path));
    response.writeHead(200, { "Content-Type": TYPES[extname(path)] ?? "application/octet-stream" }).end(body);
  } catch {
    response.writeHead(404).end();
  }
}).listen(Number(process.env.PORT), "127.0.0.1", () => console.log(`listening on ${process.env.PORT}`));
