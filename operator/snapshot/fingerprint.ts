/**
 * What a start-up snapshot was built from, so that it is never used once that changed: the size
 * and modification time of each file (what make and tsc --incremental compare), taken when the
 * snapshot is built and compared when it starts.
 */
import { statSync } from 'node:fs'
import { chartFiles } from '../render/chart.ts'

/** `[absolute path, size, mtimeMs]` per file; a missing file has size -1. */
export type Fingerprint = [path: string, size: number, mtimeMs: number][]

/** The fingerprint of `files` now. */
export function fingerprint(files: readonly string[]): Fingerprint {
  return files.map((file) => {
    const st = statSync(file, { throwIfNoEntry: false })
    return st ? [file, st.size, st.mtimeMs] : [file, -1, 0]
  })
}

/** The first file that differs from `fp` (changed, created or deleted), or undefined. */
export function firstChange(fp: Fingerprint): string | undefined {
  for (const [file, size, mtimeMs] of fp) {
    const st = statSync(file, { throwIfNoEntry: false })
    if (st ? st.size !== size || st.mtimeMs !== mtimeMs : size !== -1) return file
  }
  return undefined
}

/** The newest modification time, now, of the files in `fp` (a file deleted since counts as 0). */
export function newestChange(fp: Fingerprint): number {
  let newest = 0
  for (const [file] of fp) newest = Math.max(newest, statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0)
  return newest
}

/** Whether the chart in `dir` differs from `fp` (a file changed, or one was added or removed). */
export function chartChanged(dir: string, fp: Fingerprint): boolean {
  const files = chartFiles(dir)
  return files.length !== fp.length || files.some((f, i) => f !== fp[i]![0]) || firstChange(fp) !== undefined
}
