// The smallest ACP client on the TypeScript SDK: it starts the agent given
// as its arguments, sends it one prompt, "hello", and prints the agent's
// messages. The same client as the Go examples/hello/client, for
// docs/types.md's count of lines.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, ...args] = process.argv.slice(2);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const output = Writable.toWeb(agent.stdin) as WritableStream<Uint8Array>;
const input = Readable.toWeb(agent.stdout) as unknown as ReadableStream<Uint8Array>;

const app = acp.client({ name: "hello-client" }).onNotification(acp.methods.client.session.update, ({ params }) => {
  if (params.update.sessionUpdate === "agent_message_chunk" && params.update.content.type === "text") {
    console.log(params.update.content.text);
  }
});
await app.connectWith(acp.ndJsonStream(output, input), async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION });
  const session = await ctx.request(acp.methods.agent.session.new, { cwd: "/", mcpServers: [] });
  await ctx.request(acp.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "hello" }],
  });
});
agent.kill();
