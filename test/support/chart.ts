/** Test charts: a copy of the bundled chart in a temporary directory, with files replaced or added. */
import { cpSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { DEFAULT_CHART_DIR } from '../../operator/render/chart.ts'
import { RenderError } from '../../operator/render/errors.ts'
import { tempDir } from './tmp.ts'

/** Copies charts/memcached, writes `files` (path → content, null deletes) over it; returns the directory. */
export function chartWith(files: Record<string, string | null>): string {
  const dir = tempDir('mc-chart-')
  cpSync(DEFAULT_CHART_DIR, dir, { recursive: true })
  for (const [path, content] of Object.entries(files)) {
    if (content === null) rmSync(join(dir, path))
    else writeFileSync(join(dir, path), content)
  }
  return dir
}

/** A fixture chart: charts/memcached with the files of test/fixtures/charts/<name> copied over it; returns the directory. */
export function fixtureChart(name: string): string {
  const dir = chartWith({})
  cpSync(resolve(import.meta.dirname, '..', 'fixtures', 'charts', name), dir, { recursive: true })
  return dir
}

/** The RenderError that `fn` throws (any other error is rethrown; no error fails). */
export function failure(fn: () => unknown): RenderError {
  try {
    fn()
  } catch (err) {
    if (err instanceof RenderError) return err
    throw err
  }
  throw new Error('expected a RenderError')
}
