/**
 * What the start-up snapshot of `render` does when it is built and when it starts (entry.ts wires
 * these to node's snapshot API). Built: load the bundled chart, render the samples so that V8 has
 * compiled every function a render calls, and record what the snapshot was built from. Started:
 * run `render` from the snapshot only while nothing it was built from changed; a changed source
 * file or dependency runs the command from the sources (and rebuilds the snapshot in the
 * background), a changed chart file is simply read again.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { processIO, type CliIO } from '../cli/io.ts'
import { prepareCli, runCli } from '../cli/program.ts'
import { DEFAULT_CHART_DIR, forgetChart, loadChart } from '../render/chart.ts'
import { ModuleUnavailable } from '../render/errors.ts'
import { clearParseCache } from '../render/manifest.ts'
import { chartChanged, chartFiles, fingerprint, firstChange, type Fingerprint } from './fingerprint.ts'

/** The project root (every module of the snapshot's bundle sits two directories below it). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** What a snapshot was built from (its code: sources and dependencies; the bundled chart), and its `render` command line. */
export interface Built {
  code: Fingerprint
  chart: Fingerprint
  /** `render`'s command line, built ahead (commander's options cost start-up time); it writes to {@link Built.io}'s target. */
  render: (argv: string[]) => Promise<number>
  io: { target: CliIO }
}

/** Loads the bundled chart, builds `render`'s command line, and records what the snapshot is built from (`inputs`: every file it holds). */
export function prepare(inputs: string[]): Built {
  loadChart()
  const io: Built['io'] = { target: { stdout: () => {}, stderr: () => {}, stdin: async () => '', cwd: ROOT } }
  const render = prepareCli(
    {
      stdout: (text) => io.target.stdout(text),
      stderr: (text) => io.target.stderr(text),
      stdin: () => io.target.stdin(),
      get cwd() {
        return io.target.cwd
      },
    },
    'render',
  )
  return { code: fingerprint(inputs), chart: fingerprint(chartFiles(DEFAULT_CHART_DIR)), render, io }
}

/** Renders every sample CR as a file, from stdin, as JSON and with flags; throws on any failure. */
export async function warmUp(root = ROOT): Promise<number> {
  const samples = join(root, 'kustomize', 'samples')
  let renders = 0
  for (const file of readdirSync(samples).filter((f) => f.endsWith('.yaml'))) {
    const text = readFileSync(join(samples, file), 'utf8')
    if (!/^kind: Memcached$/m.test(text)) continue
    let err = ''
    const io: CliIO = { stdout: () => {}, stderr: (t) => void (err += t), stdin: async () => text, cwd: samples }
    for (const args of [['-f', file], ['-f', '-', '-o', 'json'], ['-f', file, '--set', 'size=2', '-n', 'default']]) {
      if ((await runCli(['render', ...args], io)) !== 0) throw new Error(`render ${args.join(' ')} (${file}) failed: ${err}`)
      renders++
    }
  }
  // Compiled code stays; rendered results do not, so that a render from the snapshot does all its work.
  clearParseCache()
  return renders
}

/** How a command starts: from the snapshot, or from the sources and why (and whether to rebuild the snapshot). */
export type Start = { from: 'snapshot' } | { from: 'sources'; reason: string; rebuild: boolean }

/** Decides how `args` start; forgets the bundled chart when one of its files changed. */
export function decide(args: readonly string[], built: Built, root = ROOT): Start {
  if (args[0] !== 'render') return { from: 'sources', reason: `${args[0] ?? 'no command'} is not in the snapshot`, rebuild: false }
  const changed = firstChange(built.code)
  if (changed) return { from: 'sources', reason: `${relative(root, changed)} changed since the snapshot was built`, rebuild: true }
  if (chartChanged(DEFAULT_CHART_DIR, built.chart)) forgetChart(DEFAULT_CHART_DIR)
  return { from: 'snapshot' }
}

function debug(line: string): void {
  if (process.env.MEMCACHED_OPERATOR_DEBUG_START) process.stderr.write(`memcached-operator: ${line}\n`)
}

/** Runs the command from the sources, as if the snapshot did not exist; rebuilds the snapshot afterwards if asked. */
function fromSources(args: string[], reason: string, rebuild: boolean): void {
  debug(`started from sources (${reason})`)
  const { spawn, spawnSync } = process.getBuiltinModule('node:child_process')
  const r = spawnSync(process.execPath, ['--max-semi-space-size=2', join(ROOT, 'operator', 'cli', 'main.js'), ...args], { stdio: 'inherit' })
  if (r.error) throw r.error
  if (rebuild && process.env.MEMCACHED_OPERATOR_SNAPSHOT !== 'off') {
    // After the command, so that it does not compete with it; build.ts takes a lock.
    spawn(process.execPath, [join(ROOT, 'operator', 'snapshot', 'build.ts'), '--quiet', '--if-possible'], { detached: true, stdio: 'ignore' }).unref()
  }
  if (r.signal) process.kill(process.pid, r.signal)
  process.exitCode = r.status ?? 1
}

/** The snapshot's main function: process.argv is `node <launcher> <command> …`. */
export async function main(built: Built): Promise<void> {
  const args = process.argv.slice(2)
  const start = decide(args, built)
  if (start.from === 'sources') return fromSources(args, start.reason, start.rebuild)
  debug('started from the render snapshot')
  // Same reason as main.js: `yaml` reads process.env for every token.
  process.env = { ...process.env }
  built.io.target = processIO()
  try {
    process.exitCode = await built.render(args)
  } catch (err) {
    // The chart loads before any input is read, and output is written only at the end.
    if (err instanceof ModuleUnavailable) return fromSources(args, `the chart needs ${err.id}`, false)
    throw err
  }
}
