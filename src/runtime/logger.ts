/**
 * The one root logger factory. Only the edges log (main, reconcilers, servers); each reconcile gets a child via
 * `logger.child({ controller, namespace, name })`, whose fields appear on every record it writes.
 */
import winston from "winston";

/** The logger type every module accepts; the same as winston's so `child()` and levels work as documented there. */
export type Logger = winston.Logger;

/** `json`: one JSON object per line (the default, for log pipelines). `text`: `ts LEVEL msg k=v` for humans. */
export type LogFormat = "json" | "text";

/** Accepted `level` values, most to least severe (winston's npm levels). */
export const LOG_LEVELS: readonly string[] = Object.keys(winston.config.npm.levels);

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** Lowest level written; one of {@link LOG_LEVELS}. */
  level: string;
  /** Defaults to `json`. */
  format?: LogFormat;
  /** Destination; defaults to stdout. Tests pass a stream to read the records back. */
  stream?: NodeJS.WritableStream;
}

/**
 * Creates the root logger. Every record carries `timestamp` (ISO 8601), `level` and `msg`, then its fields; Error
 * values in fields are written as their message, bigints as decimal strings, and an object met a second time in one
 * record (a cycle, or a shared reference) as "[Circular]", so logging never throws on awkward metadata.
 *
 * @throws RangeError when `level` or `format` is unknown, so a bad flag fails at startup instead of muting logs.
 */
export function createLogger(options: LoggerOptions): Logger {
  if (!LOG_LEVELS.includes(options.level)) {
    throw new RangeError(`unknown log level "${options.level}"; expected one of ${LOG_LEVELS.join(", ")}`);
  }
  const format = options.format ?? "json";
  if (format !== "json" && format !== "text") {
    throw new RangeError(`unknown log format "${String(format)}"; expected json or text`);
  }
  const render = format === "json" ? renderJson : renderText;
  const logger = winston.createLogger({
    level: options.level,
    levels: winston.config.npm.levels,
    format: winston.format.combine(
      winston.format.errors({ stack: true }),
      winston.format.timestamp(),
      winston.format.printf((info) => render(toRecord(info))),
    ),
    transports: [
      options.stream === undefined
        ? new winston.transports.Console()
        : new winston.transports.Stream({ stream: options.stream }),
    ],
  });
  return skippingDisabledLevels(logger, options.level);
}

/**
 * Winston renders every record (the format chain: timestamp, JSON) and passes it through two streams before its
 * transport drops it by level, so a `debug` call at level `info` cost as much as a written line. The methods of the
 * levels below `level` become no-ops on the root logger instead, and children (winston makes them with
 * Object.create of their parent) inherit them. The level is fixed at startup, so nothing turns them back on.
 */
function skippingDisabledLevels(logger: Logger, level: string): Logger {
  const levels: Record<string, number> = winston.config.npm.levels;
  const limit = levels[level] ?? Number.POSITIVE_INFINITY;
  for (const [name, priority] of Object.entries(levels)) {
    if (priority <= limit) continue;
    Object.defineProperty(logger, name, {
      value: function skipped(this: Logger): Logger {
        return this;
      },
      configurable: true,
      writable: true,
    });
  }
  return logger;
}

/** A logger that discards everything, children included; for tests and tools that must stay quiet. */
export function silentLogger(): Logger {
  return winston.createLogger({ silent: true });
}

/** A log record with its keys in the order operators read them; symbol keys (winston internals) are dropped. */
type LogRecord = Record<string, unknown>;

function toRecord(info: winston.Logform.TransformableInfo): LogRecord {
  const { timestamp, level, message, ...fields } = info;
  return { timestamp, level, msg: message, ...fields };
}

function renderJson(record: LogRecord): string {
  return JSON.stringify(record, safeReplacer());
}

function renderText(record: LogRecord): string {
  const { timestamp, level, msg, ...fields } = record;
  const head = `${String(timestamp)} ${String(level).toUpperCase()} ${String(msg)}`;
  // As in JSON, a field without a value is left out (no `cluster=undefined`).
  const tail = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${textValue(value)}`);
  return [head, ...tail].join(" ");
}

/** Bare when unambiguous (`name=pool-a`), JSON-quoted otherwise (`message="no free address"`). */
function textValue(value: unknown): string {
  const json = JSON.stringify(value, safeReplacer()) ?? String(value);
  if (typeof value === "string" && /^[^\s"=]+$/.test(value)) return value;
  return json;
}

/**
 * JSON.stringify replacer that cannot throw: bigint (addresses are bigints) → decimal string, Error → message,
 * object already written in this record → "[Circular]". A fresh one per record, since it remembers what it saw.
 */
function safeReplacer(): (key: string, value: unknown) => unknown {
  const seen = new WeakSet<object>();
  return (_key, value) => {
    if (typeof value === "bigint") return value.toString();
    if (value instanceof Error) return value.message;
    if (typeof value === "object" && value !== null) {
      if (seen.has(value)) return "[Circular]";
      seen.add(value);
    }
    return value;
  };
}
