/** Loopback ports: pick a free one, or prove a chosen one is free before a child process tries to bind it. */
import { createServer } from "node:net";

/** Resolves when 127.0.0.1:`port` can be bound (0 picks one); rejects with a clear message when it is taken. */
export async function claimPort(port = 0): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", (err: NodeJS.ErrnoException) => {
      reject(
        new Error(
          err.code === "EADDRINUSE"
            ? `port 127.0.0.1:${port} is already in use; choose another port or stop what holds it`
            : `cannot bind 127.0.0.1:${port}: ${err.message}`,
        ),
      );
    });
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      const chosen = typeof address === "object" && address ? address.port : port;
      server.close(() => resolve(chosen));
    });
  });
}
