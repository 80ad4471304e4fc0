/** Test charts: a copy of the bundled chart in a temporary directory, with files replaced or added. */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_CHART_DIR } from '../../operator/render/chart.ts'

/** Copies charts/memcached, writes `files` (path → content, null deletes) over it; returns the directory. */
export function chartWith(files: Record<string, string | null>): string {
  const dir = mkdtempSync(join(tmpdir(), 'mc-chart-'))
  cpSync(DEFAULT_CHART_DIR, dir, { recursive: true })
  for (const [path, content] of Object.entries(files)) {
    if (content === null) rmSync(join(dir, path))
    else writeFileSync(join(dir, path), content)
  }
  return dir
}
