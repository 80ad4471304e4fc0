/**
 * What the start-up snapshot of `render` does when it is built and when it starts (entry.ts wires
 * these to node's snapshot API). Built: load the bundled chart, render the samples so that V8 has
 * compiled every function a render calls, and record what the snapshot was built from. Started:
 * run `render` from the snapshot only while nothing it was built from changed; a changed source
 * file or dependency runs the command from the sources, saying so in one line on stderr (nothing
 * is left running in the background: `npm run snapshot` rebuilds it), a changed chart file is
 * simply read again.
 */
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { processIO, type CliIO } from '../cli/io.ts'
import { prepareCli, runCli } from '../cli/program.ts'
import { chartFiles, DEFAULT_CHART_DIR, forgetChart, loadChart } from '../render/chart.ts'
import { ModuleUnavailable } from '../render/errors.ts'
import { clearParseCache } from '../render/manifest.ts'
import { chartChanged, fingerprint, firstChange, type Fingerprint } from './fingerprint.ts'

/** The project root (this module is operator/snapshot/start.ts). */
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

/**
 * Renders every sample CR as a file, from stdin, as JSON and with flags, and once more with the
 * snapshot's own command line (given `built`: what commander builds on a first parse, such as the
 * help option, is then in the snapshot; it restores its state before every parse); throws on any
 * failure.
 */
export async function warmUp(root = ROOT, built?: Built): Promise<number> {
  const samples = join(root, 'kustomize', 'samples')
  let renders = 0
  for (const file of readdirSync(samples).filter((f) => f.endsWith('.yaml'))) {
    const text = readFileSync(join(samples, file), 'utf8')
    if (!/^kind: Memcached$/m.test(text)) continue
    let err = ''
    const io: CliIO = { stdout: () => {}, stderr: (t) => void (err += t), stdin: async () => text, cwd: samples }
    for (const args of [['-f', file], ['-f', '-', '-o', 'json'], ['-f', file, '--set', 'size=2', '-n', 'default']]) {
      let code: number
      try {
        code = await runCli(['render', ...args], io)
      } catch (e) {
        if (!(e instanceof ModuleUnavailable)) throw e
        throw new Error('the compiled validator of the chart is not in the validator cache, and a snapshot cannot compile it: MEMCACHED_OPERATOR_CACHE_DIR, or $TMPDIR/memcached-operator-cache-<uid>, must be a directory of this user that others cannot write to')
      }
      if (code !== 0) throw new Error(`render ${args.join(' ')} (${file}) failed: ${err}`)
      renders++
    }
    if (built) {
      const target = built.io.target
      built.io.target = io
      try {
        const code = await built.render(['render', '-f', file])
        if (code !== 0) throw new Error(`render -f ${file} failed: ${err}`)
      } finally {
        built.io.target = target
      }
      renders++
    }
  }
  // Compiled code stays; rendered results do not, so that a render from the snapshot does all its work.
  clearParseCache()
  return renders
}

/** Whether this process is a single executable application (loaded when asked: node warns that its module is not verified in a snapshot). */
function isSingleExecutable(): boolean {
  return process.getBuiltinModule('node:sea').isSea()
}

/**
 * The node binary that runs the sources. Started from the snapshot, this process is a build's
 * executable (a copy of node with the snapshot in it), which would only start the snapshot again,
 * whatever it is given to run: the executable (operator/cli/memcached-operator) names the node it
 * checked the build against (`given`), and the executable itself is refused (it would start itself
 * forever). Not the link in the build's directory: a newer build may have removed that directory.
 */
export function sourcesNode(given: string | undefined, execPath = process.execPath, isSnapshot = isSingleExecutable()): string {
  if (!isSnapshot) return execPath
  const node = given ? statSync(given, { bigint: true, throwIfNoEntry: false }) : undefined
  const self = statSync(execPath, { bigint: true, throwIfNoEntry: false })
  if (!given || !isAbsolute(given) || !node?.isFile() || (self && node.ino === self.ino && node.dev === self.dev)) {
    throw new Error(`the snapshot was started without the node binary it was built from (${given || 'none'}): run operator/cli/memcached-operator, not ${execPath}`)
  }
  return given
}

/** How a command starts: from the snapshot, or from the sources and why (and whether the snapshot is out of date, which the user is told). */
export type Start = { from: 'snapshot' } | { from: 'sources'; reason: string; stale: boolean }

/**
 * Decides how `args` start, given the directory of the executable that started the snapshot (the
 * snapshot serves the project it was built for, nothing else); forgets the bundled chart when one
 * of its files changed.
 */
export function decide(args: readonly string[], cliDir: string, built: Built, root = ROOT): Start {
  if (args[0] !== 'render') return { from: 'sources', reason: `${args[0] ?? 'no command'} is not in the snapshot`, stale: false }
  if (resolve(cliDir) !== join(root, 'operator', 'cli')) {
    // Moved, or another project that shares the node_modules or the snapshot directory.
    const elsewhere = existsSync(join(root, 'operator', 'snapshot', 'build.ts'))
    return { from: 'sources', reason: `the snapshot was built for the project in ${root}${elsewhere ? '; give this one its own MEMCACHED_OPERATOR_SNAPSHOT_DIR' : ''}`, stale: true }
  }
  const changed = firstChange(built.code)
  if (changed) return { from: 'sources', reason: `${relative(root, changed)} changed since the snapshot was built`, stale: true }
  if (chartChanged(DEFAULT_CHART_DIR, built.chart)) forgetChart(DEFAULT_CHART_DIR)
  return { from: 'snapshot' }
}

/**
 * The directory the executable lives in, as the kernel finds it: the executable names it without
 * resolving links or `..` (which the shell would pay a subshell for), so a path that does not read
 * as this project's operator/cli, or holds a `..`, is resolved (a copy of the project, or the
 * project through a link); one that does costs nothing.
 */
export function physicalDir(dir: string, root = ROOT): string {
  // After a link, `..` is the parent of where the link leads: text alone cannot tell.
  if (!dir.split('/').includes('..') && resolve(dir) === join(root, 'operator', 'cli')) return resolve(dir)
  try {
    return realpathSync.native(dir)
  } catch {
    return resolve(dir)
  }
}

/**
 * Takes out of `env` what the executable added to GLIBC_TUNABLES for this process only (it says so
 * in MEMCACHED_OPERATOR_TUNABLES), so that what this process starts gets the user's environment.
 */
export function restoreEnvironment(env: NodeJS.ProcessEnv): void {
  if (env.MEMCACHED_OPERATOR_TUNABLES !== 'added') return
  delete env.MEMCACHED_OPERATOR_TUNABLES
  const own = (env.GLIBC_TUNABLES ?? '').replace(/(^|:)glibc\.malloc\.hugetlb=1$/, '')
  if (own === '') delete env.GLIBC_TUNABLES
  else env.GLIBC_TUNABLES = own
}

function debug(line: string): void {
  if (process.env.MEMCACHED_OPERATOR_DEBUG_START) process.stderr.write(`memcached-operator: ${line}\n`)
}

/**
 * Runs the command from the sources of the executable's project, as if the snapshot did not exist,
 * forwarding the signals that stop it. An out-of-date snapshot is said in one line on stderr; it
 * is not rebuilt behind the user's back (a build takes seconds and hundreds of megabytes).
 */
function fromSources(args: string[], cliDir: string, given: string | undefined, reason: string, stale: boolean): void {
  debug(`started from sources (${reason})`)
  if (stale) process.stderr.write(`memcached-operator: the render snapshot is out of date (${reason}); running from the sources (npm run snapshot rebuilds it)\n`)
  const { spawn } = process.getBuiltinModule('node:child_process')
  let node: string
  try {
    node = sourcesNode(given)
  } catch (err) {
    process.stderr.write(`memcached-operator: ${(err as Error).message}\n`)
    process.exitCode = 1
    return
  }
  const child = spawn(node, ['--max-semi-space-size=2', join(cliDir, 'main.js'), ...args], { stdio: 'inherit' })
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
  const forward = (signal: NodeJS.Signals): void => void child.kill(signal)
  for (const signal of signals) process.on(signal, forward)
  child.on('error', (err) => {
    process.stderr.write(`memcached-operator: cannot start ${node}: ${err.message}\n`)
    process.exitCode = 1
  })
  child.on('exit', (code, signal) => {
    for (const s of signals) process.off(s, forward)
    // Die of the same signal as the command (or, for one that node ignores, exit as a shell
    // reports it: 128 + its number), or exit with its code.
    if (signal) {
      process.exitCode = 128 + (process.getBuiltinModule('node:os').constants.signals[signal] ?? 0)
      process.kill(process.pid, signal)
    } else {
      process.exitCode = code ?? 1
    }
  })
}

/**
 * The snapshot's main function: process.argv is `<the build's executable> <the same> <node>
 * <operator/cli/memcached-operator> <command> …` (a single executable application gets its own
 * path twice; the executable passes the node binary and itself).
 */
export async function main(built: Built): Promise<void> {
  const [, , node, cli] = process.argv
  const args = process.argv.slice(4)
  const tunables = process.env.GLIBC_TUNABLES ?? ''
  restoreEnvironment(process.env)
  const cliDir = physicalDir(dirname(cli ?? ''))
  const start = decide(args, cliDir, built)
  if (start.from === 'sources') return fromSources(args, cliDir, node, start.reason, start.stale)
  debug(`started from the render snapshot, with ${process.execArgv.join(' ') || 'no node options'} and GLIBC_TUNABLES=${tunables}`)
  // Same reason as main.js: `yaml` reads process.env for every token.
  process.env = { ...process.env }
  built.io.target = processIO()
  try {
    process.exitCode = await built.render(args)
  } catch (err) {
    // The chart loads before any input is read, and output is written only at the end.
    if (err instanceof ModuleUnavailable) return fromSources(args, cliDir, node, `the chart needs ${err.id}`, false)
    throw err
  }
}
