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

/** A usage error: exit code 2, like kubectl and helm. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}
