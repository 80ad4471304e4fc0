/** An in-memory CliIO for running commands in-process. */
import type { CliIO } from '../../operator/cli/io.ts'

export interface CapturedIO extends CliIO {
  out(): string
  err(): string
}

/** Captures stdout/stderr; `stdin` is what standard input holds. */
export function captureIO(stdin = '', cwd = process.cwd()): CapturedIO {
  let out = ''
  let err = ''
  return {
    stdout: (text) => {
      out += text
    },
    stderr: (text) => {
      err += text
    },
    stdin: async () => stdin,
    cwd,
    out: () => out,
    err: () => err,
  }
}
