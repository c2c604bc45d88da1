// The smallest ACP agent on the TypeScript SDK: it answers each prompt with
// one message, "You said: ...", over stdio. The same agent as the Go
// examples/hello/agent, for docs/types.md's count of lines; the interop
// tests run each side against the other language's.

import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const app = acp
  .agent({ name: "hello-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({ protocolVersion: acp.PROTOCOL_VERSION }))
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: "sess_1" }))
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const said = params.prompt.map((block) => (block.type === "text" ? block.text : "")).join("");
    await client.notify(acp.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `You said: ${said}` } },
    });
    return { stopReason: "end_turn" };
  });

const output = Writable.toWeb(process.stdout) as WritableStream<Uint8Array>;
const input = Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>;
app.connect(acp.ndJsonStream(output, input));
