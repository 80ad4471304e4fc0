import { goDuration } from '../kube/time.ts'
import { readFileSync } from 'node:fs'

/** The streams a command uses, injectable so that tests run commands in-process. */
export interface CliIO {
  stdout: (text: string) => void
  stderr: (text: string) => void
  /** Reads all of standard input. */
  stdin: () => Promise<string>
  cwd: string
}

/** The process's own streams. */
export function processIO(): CliIO {
  // `render … | head` closes the pipe early: stop quietly, not with a stack trace, and with the
  // status a shell reports for helm or kubectl, which SIGPIPE kills (128 + 13).
  if (process.stdout.listenerCount('error') === 0) {
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err
      process.exit(141)
    })
  }
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdin: async () => {
      const chunks: Buffer[] = []
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
      return Buffer.concat(chunks).toString('utf8')
    },
    cwd: process.cwd(),
  }
}

/** Invalid input that is not a render problem (an unreadable kubeconfig, …): exit code 1. */
export class InputError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'InputError'
  }
}

/** A usage error: exit code 2, like kubectl and helm. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** The package version, for `--version` and the user agent. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

/** An AbortSignal that fires on the first SIGINT or SIGTERM. */
export function processSignal(): AbortSignal {
  const controller = new AbortController()
  const stop = (): void => controller.abort()
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  return controller.signal
}

/** A Go duration (`10m`, `1h30m`, `500ms`) in milliseconds; a bad one is a usage error. */
export function parseDuration(text: string): number {
  try {
    return goDuration(text)
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

