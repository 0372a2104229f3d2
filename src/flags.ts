/** Command-line flags of the controller (spec §8), each with an environment-variable equivalent. */
import { parseArgs } from "node:util";

export interface Flags {
  kubeconfig?: string;
  namespace: string;
  poolConcurrency: number;
  logLevel: string;
  logFormat: "json" | "text";
}

export const USAGE = `Usage: npm start -- [flags]
  --kubeconfig PATH        kubeconfig to use (env KUBECONFIG; default: in-cluster, then ~/.kube/config)
  --namespace NS           namespace to watch; empty watches all (env WATCH_NAMESPACE)
  --pool-concurrency N     pools reconciled in parallel (env POOL_CONCURRENCY, default 4)
  --log-level LEVEL        error|warn|info|debug (env LOG_LEVEL, default info)
  --log-format FORMAT      json|text (env LOG_FORMAT, default json)`;

/** Parses argv and env. Throws an Error with a one-line message on bad input (the caller prints USAGE). */
export function parseFlags(argv: string[], env: NodeJS.ProcessEnv): Flags {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: "string" },
      namespace: { type: "string" },
      "pool-concurrency": { type: "string" },
      "log-level": { type: "string" },
      "log-format": { type: "string" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) throw new Error("help");
  const concurrencyText = values["pool-concurrency"] ?? env.POOL_CONCURRENCY ?? "4";
  const poolConcurrency = Number(concurrencyText);
  if (!Number.isInteger(poolConcurrency) || poolConcurrency < 1 || poolConcurrency > 256) {
    throw new Error(`--pool-concurrency must be an integer from 1 to 256, got "${concurrencyText}"`);
  }
  const logFormat = values["log-format"] ?? env.LOG_FORMAT ?? "json";
  if (logFormat !== "json" && logFormat !== "text") throw new Error(`--log-format must be json or text, got "${logFormat}"`);
  const kubeconfig = values.kubeconfig ?? env.KUBECONFIG;
  return {
    ...(kubeconfig ? { kubeconfig } : {}),
    namespace: values.namespace ?? env.WATCH_NAMESPACE ?? "",
    poolConcurrency,
    logLevel: values["log-level"] ?? env.LOG_LEVEL ?? "info",
    logFormat,
  };
}
