// Client side of the benchmark workload with the TypeScript ACP SDK. It
// spawns the agent command given after "--", talks to it over stdio, and
// prints one JSON line with raw measurements for the Go driver to reduce:
//
//   node client.mjs throughput N -- CMD ARGS...  {"seqNs":..,"par8Ns":..,"calls":N}
//   node client.mjs cancel N -- CMD ARGS...      {"ret":[ns..],"handler":[ns..],"answer":[ns..],"lost":k}
//
// Times are CLOCK_MONOTONIC nanoseconds (process.hrtime.bigint), the clock
// the agents stamp their stderr lines with.
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

const args = process.argv.slice(2);
const sep = args.indexOf("--");
if (sep < 2) {
  console.error("usage: client.mjs throughput|cancel N -- CMD ARGS...");
  process.exit(2);
}
const [mode, nArg] = args;
const n = Number(nArg);
const cmd = args.slice(sep + 1);

const now = () => process.hrtime.bigint();
const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "pipe"] });

// Stamps from the agent's stderr, one queue per tag.
const stamps = { B: [], C: [] };
const waiters = { B: [], C: [] };
let errCarry = "";
child.stderr.setEncoding("utf8");
child.stderr.on("data", (chunk) => {
  const lines = (errCarry + chunk).split("\n");
  errCarry = lines.pop();
  for (const line of lines) {
    const [tag, ns] = line.split(" ");
    if (!(tag in stamps)) {
      process.stderr.write(line + "\n");
      continue;
    }
    const w = waiters[tag].shift();
    if (w) w(BigInt(ns));
    else stamps[tag].push(BigInt(ns));
  }
});
const nextStamp = (tag) =>
  stamps[tag].length > 0
    ? Promise.resolve(stamps[tag].shift())
    : new Promise((resolve) => waiters[tag].push(resolve));

// Cancellation answers seen on the agent's stdout, timed when read.
const answers = [];
const answerWaiters = [];
let outCarry = "";
const countMarkers = (s) => s.split('"cancelled"').length - 1 + s.split("-32800").length - 1;
child.stdout.on("data", (chunk) => {
  const t = now();
  const old = countMarkers(outCarry);
  const buf = outCarry + chunk.toString("latin1");
  const hits = countMarkers(buf) - old;
  outCarry = buf.slice(-16);
  for (let i = 0; i < hits; i++) {
    const w = answerWaiters.shift();
    if (w) w(t);
    else answers.push(t);
  }
});
const nextAnswer = () =>
  answers.length > 0 ? Promise.resolve(answers.shift()) : new Promise((resolve) => answerWaiters.push(resolve));

let updates = 0;
const app = acp.client({ name: "bench" }).onNotification(acp.methods.client.session.update, () => {
  updates++;
});
const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
const prompt = (sessionId, text, options) =>
  conn.agent.request(
    acp.methods.agent.session.prompt,
    { sessionId, prompt: [{ type: "text", text }] },
    options,
  );

const timeout = (ms) => new Promise((resolve) => setTimeout(() => resolve(null), ms).unref());

async function throughput() {
  for (let i = 0; i < 1000; i++) await prompt("s1", "hello");
  let t = now();
  for (let i = 0; i < n; i++) await prompt("s1", "hello");
  const seqNs = Number(now() - t);
  let next = 0;
  t = now();
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      while (next++ < n) await prompt(`s${w + 1}`, "hello");
    }),
  );
  const par8Ns = Number(now() - t);
  return { seqNs, par8Ns, calls: n };
}

async function cancel() {
  const ret = [];
  const handler = [];
  const answer = [];
  let lost = 0;
  const warm = 20;
  for (let i = 0; i < n + warm; i++) {
    const ac = new AbortController();
    const started = nextStamp("B");
    const p = prompt("s1", "block", { cancellationSignal: ac.signal }).then(now, now);
    await started;
    const t0 = now();
    ac.abort();
    const [tRet, tC, tAns] = await Promise.all([
      Promise.race([p, timeout(5000)]),
      Promise.race([nextStamp("C"), timeout(5000)]),
      Promise.race([nextAnswer(), timeout(5000)]),
    ]);
    if (tRet === null || tC === null || tAns === null) {
      lost++;
      continue;
    }
    if (i < warm) continue;
    ret.push(Number(tRet - t0));
    handler.push(Number(tC - t0));
    answer.push(Number(tAns - t0));
  }
  return { ret, handler, answer, lost };
}

let result;
try {
  result = mode === "throughput" ? await throughput() : await cancel();
} finally {
  conn.close();
  child.stdin.end();
}
await new Promise((resolve) => child.on("exit", resolve));
process.stdout.write(JSON.stringify(result) + "\n");
process.exit(0);
