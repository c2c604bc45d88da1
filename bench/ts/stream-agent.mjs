// The stream workload (../stream.go) served with the TypeScript ACP SDK over
// stdio: the agent of stream-app.mjs.
import * as acp from "@agentclientprotocol/sdk";
import { Readable, Writable } from "node:stream";
import { streamAgent } from "./stream-app.mjs";

const conn = streamAgent().connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0);
