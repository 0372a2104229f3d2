/**
 * The admin's fresh address blocks (never overlapping, aligned so NetBox takes them as prefixes), and its requests
 * against a server that drops idle connections unannounced, as NetBox's gunicorn does. No NetBox needed.
 */
import { expect } from "chai";
import { createServer, type Server, type Socket } from "node:net";
import { NetBoxAdmin } from "./netboxadmin.js";

describe("NetBoxAdmin's fresh blocks", () => {
  const admin = (): NetBoxAdmin => new NetBoxAdmin("http://127.0.0.1:1", () => "");

  it("aligns a /22 on its boundary and never hands out a /24 twice", () => {
    const a = admin();
    expect(a.fresh24().cidr).to.equal("10.0.1.0/24");
    expect(a.freshBlock(22)).to.equal("10.0.4.0/22");
    expect(a.fresh24().cidr).to.equal("10.0.8.0/24");
    expect(a.freshBlock(22)).to.equal("10.0.12.0/22");
    expect(a.freshBlock(24)).to.equal("10.0.16.0/24");
    expect(a.freshBlock(16)).to.equal("10.1.0.0/16");
    expect(a.fresh24().cidr).to.equal("10.2.0.0/24");
  });

  it("refuses lengths it cannot align", () => {
    expect(() => admin().freshBlock(25)).to.throw(/16 to 24/);
    expect(() => admin().freshBlock(15)).to.throw(/16 to 24/);
  });
});

/** Idle time after which the server below drops a connection, like gunicorn's `--keep-alive` (2 s) scaled down. */
const IDLE_CLOSE_MS = 200;

/**
 * A minimal HTTP/1.1 server that answers every GET with `{}` on a keep-alive connection, sends no `Keep-Alive` header
 * (gunicorn sends none), and closes a connection once it was idle for IDLE_CLOSE_MS. Counts the connections it took.
 */
async function droppingServer(): Promise<{ server: Server; url: string; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket: Socket) => {
    connections++;
    let buffered = "";
    let idle = setTimeout(() => socket.end(), IDLE_CLOSE_MS);
    socket.on("data", (chunk: Buffer) => {
      clearTimeout(idle);
      buffered += chunk.toString();
      while (buffered.includes("\r\n\r\n")) {
        const end = buffered.indexOf("\r\n\r\n") + 4;
        const close = /^connection:\s*close/im.test(buffered.slice(0, end));
        buffered = buffered.slice(end);
        socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        if (close) return void socket.end();
      }
      idle = setTimeout(() => socket.end(), IDLE_CLOSE_MS);
    });
    socket.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return { server, url: `http://127.0.0.1:${address.port}`, connections: () => connections };
}

describe("NetBoxAdmin's requests", () => {
  it("never go out on a connection the server is closing for idleness (gunicorn's keep-alive, which failed a CI run)", async function () {
    this.timeout(60_000);
    const { server, url, connections } = await droppingServer();
    const admin = new NetBoxAdmin(url, () => "token");
    const failures: string[] = [];
    let requests = 0;
    try {
      // Gaps swept across the server's idle limit: a pooled connection would be reused just as the server drops it.
      for (let gap = IDLE_CLOSE_MS - 30; gap <= IDLE_CLOSE_MS + 30; gap += 2) {
        for (const path of ["/first/", "/after-gap/"]) {
          requests++;
          await admin
            .request("GET", path)
            .catch((err: Error) => failures.push(`${gap} ms: ${String(err.cause instanceof Error ? err.cause : err)}`));
          if (path === "/first/") await new Promise((resolve) => setTimeout(resolve, gap));
        }
      }
    } finally {
      server.close();
    }
    expect(failures).to.deep.equal([]);
    expect(connections()).to.equal(requests);
  });
});
