/**
 * `--overlays FILE`: the platform's overlays (render/overlays.ts), read once. `run` applies them to
 * every Memcached they select; `render` and `diff` take the same file to show what the operator
 * would apply.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseYamlValue } from '../render/chart.ts'
import { RenderError } from '../render/errors.ts'
import { parsePlatformOverlays, type PlatformOverlay } from '../render/overlays.ts'
import { UsageError } from './io.ts'

/** The overlays of `file` (relative to `cwd`); none without a file. @throws UsageError naming the file and every problem */
export function readPlatformOverlays(file: string | undefined, cwd: string): PlatformOverlay[] {
  if (file === undefined) return []
  const path = resolve(cwd, file)
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new UsageError(`--overlays ${file}: cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  try {
    return parsePlatformOverlays(parseYamlValue(text, file), file)
  } catch (err) {
    if (!(err instanceof RenderError)) throw err
    throw new UsageError(`--overlays ${file}:\n${err.problems.map((p) => `  - ${p}`).join('\n')}`)
  }
}
