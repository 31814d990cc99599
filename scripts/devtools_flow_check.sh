#!/usr/bin/env bash
# Loads timeline files (`gpuattr run --trace`, `gpuattr export --perfetto`) into Chrome DevTools'
# own flow parser and checks that it binds every launch arrow (issue 20): DevTools pairs flow
# events by category, name and id, and binds each only to a slice of the same timestamp, pid,
# tid and category, the strictest rule of the viewers (docs/visualization.md §Timeline).
#
# Needs node and npm (Debian's nodejs and npm) and the npm registry: it fetches the published
# chrome-devtools-frontend package and esbuild into a temporary directory, bundles the trace
# model's FlowsHandler.ts, and feeds it each file's events sorted by timestamp, as DevTools does.
# Nothing is kept or installed. By hand, not in ctest (it needs the network):
#   scripts/devtools_flow_check.sh TRACE.json [TRACE.json.gz ...]
# Prints one line per file (flow starts, flows bound with both ends on slices); exits 1 when a
# file has a flow DevTools does not bind.
set -euo pipefail
if (($# == 0)); then
  echo "usage: scripts/devtools_flow_check.sh TRACE.json [TRACE.json ...]" >&2
  exit 2
fi
devtools_version="1.0.1705227"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
traces=()
for trace in "$@"; do traces+=("$(realpath "${trace}")"); done

cd "${work}"
npm pack --silent "chrome-devtools-frontend@${devtools_version}" >/dev/null
tar xzf "chrome-devtools-frontend-${devtools_version}.tgz"
npm install --silent --no-save --no-audit --no-fund esbuild >/dev/null 2>&1
echo "export * as Flows from './package/front_end/models/trace/handlers/FlowsHandler.js';" >entry.ts
./node_modules/.bin/esbuild entry.ts --bundle --platform=node --format=esm --outfile=flows.mjs \
  --log-level=warning
cat >bind.mjs <<'JS'
import {Flows} from './flows.mjs';
import {readFileSync} from 'node:fs';
import {gunzipSync} from 'node:zlib';
let failed = false;
for (const path of process.argv.slice(2)) {
  let bytes = readFileSync(path);
  if (path.endsWith('.gz')) bytes = gunzipSync(bytes);
  const events = JSON.parse(bytes.toString()).traceEvents;
  events.sort((a, b) => (a.ts ?? 0) - (b.ts ?? 0));
  Flows.reset();
  for (const event of events) Flows.handleEvent(event);
  await Flows.finalize();
  const starts = events.filter(event => event.ph === 's').length;
  const bound = Flows.data().flows.filter(
      flow => flow.length === 2 && flow.every(event => event.ph === 'X')).length;
  console.log(`${path}: ${starts} flow starts, ${bound} bound by DevTools`);
  failed = failed || bound !== starts;
}
process.exit(failed ? 1 : 0);
JS
node bind.mjs "${traces[@]}"
