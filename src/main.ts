/**
 * The controller process: flags → logger → kubeconfig → manager. SIGTERM and SIGINT drain in-flight reconciles
 * before exiting.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { Manager } from "./controllers/manager.js";
import { parseFlags, USAGE, type Flags } from "./flags.js";
import { createLogger } from "./runtime/logger.js";

function loadKubeConfig(flags: Flags): KubeConfig {
  const kc = new KubeConfig();
  if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
  else kc.loadFromDefault();
  return kc;
}

async function main(): Promise<void> {
  let flags: Flags;
  try {
    flags = parseFlags(process.argv.slice(2), process.env);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    console.error(message === "help" ? USAGE : `${message}\n\n${USAGE}`);
    process.exit(message === "help" ? 0 : 2);
  }
  const logger = createLogger({ level: flags.logLevel, format: flags.logFormat });
  const manager = new Manager(loadKubeConfig(flags), { namespace: flags.namespace, poolConcurrency: flags.poolConcurrency, logger });
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info("Shutting down", { signal });
    void manager.stop().then(() => process.exit(0));
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  await manager.start();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack ?? err.message : String(err));
  process.exit(1);
});
