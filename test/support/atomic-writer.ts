/**
 * A Secret volume's files as the kubelet writes them (kubernetes pkg/volume/util/atomic_writer.go,
 * AtomicWriter.Write): the payload in a new timestamped directory `..<timestamp>`, a `..data` link
 * to it swapped in by one rename, and each key a link through `..data`. A reader that resolves a
 * path sees either the whole old set or the whole new one; two reads may straddle a swap.
 */
import { mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync, lstatSync, chmodSync } from 'node:fs'
import { join } from 'node:path'

let generation = 0

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

/** Writes (or replaces) the volume at `dir` with `files` (relative path → content), as one swap. */
export function writeAtomic(dir: string, files: Record<string, string | Buffer>): void {
  mkdirSync(dir, { recursive: true })
  const stamp = `..${new Date().toISOString().replace(/[-:]/g, '_').replace('T', '_').replace('Z', '')}.${process.pid}${++generation}`
  const ts = join(dir, stamp)
  mkdirSync(ts, { mode: 0o755 })
  chmodSync(ts, 0o755)
  for (const [path, content] of Object.entries(files)) writeFileSync(join(ts, path), content, { mode: 0o644 })
  const data = join(dir, '..data')
  const old = exists(data) ? readlinkSync(data) : undefined
  const tmp = join(dir, '..data_tmp')
  rmSync(tmp, { force: true })
  symlinkSync(stamp, tmp)
  renameSync(tmp, data)
  for (const path of Object.keys(files)) if (!exists(join(dir, path))) symlinkSync(join('..data', path), join(dir, path))
  if (old) rmSync(join(dir, old), { recursive: true, force: true })
}
