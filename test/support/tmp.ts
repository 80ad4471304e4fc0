/** Temporary directories that a test process removes when it exits (a process killed by a signal leaves them). */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const made: string[] = []
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

/** A new directory under the system's temporary directory, named `prefix` and a random suffix. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}
