// Checks AG-UI events Waypoint sent against the zod schemas of the @ag-ui/core releases its
// clients parse them with: 0.0.59, which current CopilotKit (1.74, 1.75) pins and whose run
// outcomes are strict, and 1.0.0, which @ag-ui/client 1.0 uses. Both are pinned in
// package-lock.json; tests/process/test_agui_schemas.py makes the streams from a real server.
//
//   node e2e/agui-schemas.mjs < streams.json
//
// stdin: {"streams": [{"label", "events": [event, …]}]}. stdout, one JSON line:
// {"checked": {schema: count}, "types": [...], "problems": [{schema, label, index, type, issues}]}.
// A problem is an event a schema refuses, or a key of it the schema would drop on parsing (a
// client built on it would never see that key).

import { EventSchemas as CopilotKitEvents } from "ag-ui-core-copilotkit";
import { EventSchema as ClientEvents } from "@ag-ui/core/schemas";
import { readFileSync } from "node:fs";

const SCHEMAS = {
  "@ag-ui/core 0.0.59 (CopilotKit)": CopilotKitEvents,
  "@ag-ui/core 1.0.0 (@ag-ui/client 1.0)": ClientEvents,
};

// The paths of `sent` that `parsed` lost: keys a non-strict schema strips without a word.
function dropped(sent, parsed, path = "") {
  if (sent === null || typeof sent !== "object") return [];
  if (parsed === null || typeof parsed !== "object") return [path || "(root)"];
  const out = [];
  for (const key of Object.keys(sent)) {
    const where = Array.isArray(sent) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (!(key in parsed)) out.push(where);
    else out.push(...dropped(sent[key], parsed[key], where));
  }
  return out;
}

const { streams } = JSON.parse(readFileSync(0, "utf8"));
const checked = {};
const types = new Set();
const problems = [];
for (const [schema, Events] of Object.entries(SCHEMAS)) {
  checked[schema] = 0;
  for (const { label, events } of streams) {
    events.forEach((event, index) => {
      types.add(event.type);
      checked[schema] += 1;
      const parsed = Events.safeParse(event);
      if (!parsed.success) {
        problems.push({ schema, label, index, type: event.type, issues: parsed.error.issues });
        return;
      }
      const lost = dropped(event, parsed.data);
      if (lost.length) problems.push({ schema, label, index, type: event.type, issues: [{ message: "dropped on parsing", paths: lost }] });
    });
  }
}
process.stdout.write(JSON.stringify({ checked, types: [...types].sort(), problems }) + "\n");
