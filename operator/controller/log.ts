/**
 * JSON-lines logging with pino: the level from a flag or `LOG_LEVEL`, a string `level` and an
 * ISO `time` on every line (what log pipelines expect from controller-runtime's zap output), child
 * loggers carrying `controller`, `key` and `reconcileID`, and redaction of anything that could
 * hold a secret — Secret `data`/`stringData`, tokens, passwords, Authorization headers.
 */
import { randomUUID } from 'node:crypto'
import { pino, stdTimeFunctions, type DestinationStream, type Logger } from 'pino'

export type { Logger } from 'pino'

/** Log levels accepted by {@link createLogger}. */
export const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const

/** A log level. */
export type Level = (typeof LEVELS)[number]

const SECRET_KEYS = ['token', 'password', 'data', 'stringData', 'authorization', 'Authorization', 'bearerToken', 'clientKey', 'client-key-data']

/**
 * The redacted paths: each secret-bearing key at the top level and one or two levels down
 * (pino's `*` matches one level), and the Authorization header of logged requests.
 */
export const REDACT_PATHS: readonly string[] = [
  ...SECRET_KEYS.map((k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : `["${k}"]`)),
  ...SECRET_KEYS.map((k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? `*.${k}` : `*["${k}"]`)),
  ...SECRET_KEYS.map((k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? `*.*.${k}` : `*.*["${k}"]`)),
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
]

/** Thrown for an unknown level name. */
export class LogLevelError extends Error {
  override name = 'LogLevelError'
}

/**
 * The level to use: the flag if given, else `LOG_LEVEL` from the environment, else `info`.
 * @throws LogLevelError for a name that is not a level
 */
export function resolveLevel(flag?: string, env: NodeJS.ProcessEnv = process.env): Level {
  const raw = (flag ?? env.LOG_LEVEL ?? 'info').trim().toLowerCase()
  if (!(LEVELS as readonly string[]).includes(raw)) throw new LogLevelError(`unknown log level ${JSON.stringify(raw)}; expected one of ${LEVELS.join(', ')}`)
  return raw as Level
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Default: {@link resolveLevel}() (the `LOG_LEVEL` environment variable, else info). */
  level?: Level
  /** Logged as `logger` on every line (e.g. `memcached-operator`). */
  name?: string
  /** Where lines go (default stdout). */
  destination?: DestinationStream
  /** Extra fields on every line. */
  base?: Record<string, unknown>
}

/** Creates the root logger. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const options = {
    level: opts.level ?? resolveLevel(),
    base: { ...(opts.name ? { logger: opts.name } : {}), ...opts.base },
    messageKey: 'msg',
    timestamp: stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: [...REDACT_PATHS], censor: '[REDACTED]' },
  }
  return opts.destination ? pino(options, opts.destination) : pino(options)
}

/** The fields that identify one reconcile. */
export interface ReconcileFields {
  controller: string
  /** `namespace/name` of the object reconciled. */
  key: string
  /** Default: a new random UUID (controller-runtime's `reconcileID`). */
  reconcileID?: string
}

/** A child logger for one reconcile: every line carries `controller`, `key` and `reconcileID`. */
export function reconcileLogger(parent: Logger, fields: ReconcileFields): Logger {
  return parent.child({ controller: fields.controller, key: fields.key, reconcileID: fields.reconcileID ?? randomUUID() })
}
