/**
 * What the doc tests share (test/docs.test.ts, and one test/docs-<page>.test.ts per page with
 * commands): the fenced blocks of a page, a copy of the checkout to run them in, and
 * {@link runPage}, which runs every ```sh block of one page in bash with `set -euo pipefail`, in
 * order, against a sandbox started as `npm start` starts it (the operator running, the sample CR
 * converged), with real kubectl and helm on the PATH, `memcached-operator` linked as the README's
 * `npm link` links it, and KUBECONFIG pointing at the sandbox. One page to a file, so that tap
 * runs the pages side by side. `sh long-running` blocks are started and left running for the
 * page's later blocks; `sh needs-docker` blocks are not run (no Docker engine here) and may hold
 * only docker and kind commands.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, readdirSync, readFileSync, symlinkSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import type { Test } from 'tap'
import { eventually } from './operator.ts'
import { tempDir } from './tmp.ts'
import { withoutTapHooks } from './tap-env.ts'
import { helmPath, kubectlPath } from './tools.ts'

export const root = resolve(import.meta.dirname, '..', '..')

/** The README and every page of docs/. */
export const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

export interface Block {
  page: string
  line: number
  info: string[]
  code: string
}

/** The fenced code blocks of a Markdown page, indented ones (in list items) included. */
export function blocksOf(page: string): Block[] {
  const text = readFileSync(join(root, page), 'utf8')
  const out: Block[] = []
  const fence = /^( *)```([^\n`]*)\n([\s\S]*?)^\1```[ \t]*$/gm
  for (const m of text.matchAll(fence)) {
    const indent = m[1]!.length
    const code = m[3]!
      .split('\n')
      .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
      .join('\n')
    out.push({ page, line: text.slice(0, m.index).split('\n').length, info: m[2]!.trim().split(/\s+/).filter(Boolean), code })
  }
  return out
}

/** The `sh` blocks of a page a test runs: the README's first one, the set-up, is test/docs.test.ts's own. */
export function runnableBlocks(page: string): Block[] {
  const blocks = blocksOf(page).filter((b) => b.info[0] === 'sh')
  return page === 'README.md' ? blocks.slice(1) : blocks
}

/** The test file that runs a page's commands: test/docs-<page without .md, lower case>.test.ts. */
export const pageTestFile = (page: string): string => `test/docs-${page.replace(/^docs\//, '').replace(/\.md$/, '').toLowerCase()}.test.ts`

let copy: string | undefined
/**
 * A copy of the checkout to run commands in (the docs may write files), sharing node_modules; one
 * per test file, so that node's compile cache of its sources serves all of its commands.
 */
export function copyOfCheckout(): string {
  if (copy) return copy
  const dir = (copy = tempDir('mc-docs-'))
  const skip = new Set(['node_modules', '.git', '.tap', 'coverage'])
  for (const entry of readdirSync(root)) if (!skip.has(entry)) cpSync(join(root, entry), join(dir, entry), { recursive: true })
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  return dir
}

let linked: string | undefined
/**
 * The directory where the README's `npm link` puts `memcached-operator` for the copy: npm's own
 * link, into a global prefix of the test's (without the prepare script, which the checkout's
 * `npm install` ran already).
 */
export function linkedBin(dir: string): string {
  if (linked) return linked
  const prefix = tempDir('mc-docs-prefix-')
  const r = spawnSync('npm', ['link', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, env: { ...withoutTapHooks(process.env), npm_config_prefix: prefix }, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`npm link in ${dir}: ${r.stderr}`)
  return (linked = join(prefix, 'bin'))
}

export interface Proc {
  child: ChildProcess
  output(): string
  exited: Promise<number | null>
}

/** Starts a command in its own process group (so that a signal reaches all of it, as Ctrl-C does). */
export function start(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Proc {
  const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
  return { child, output: () => out, exited }
}

export async function stop(p: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (p.child.exitCode === null && p.child.signalCode === null) process.kill(-p.child.pid!, signal)
  return p.exited
}

/**
 * The commands' environment: kubectl and helm on the PATH, and not tap's coverage hooks (the
 * commands run the copy's sources, whose coverage counts for nothing).
 */
export function environment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...withoutTapHooks(process.env),
    PATH: [dirname(kubectlPath()), dirname(helmPath()), process.env.PATH].join(':'),
    // The start-up snapshot was built for the checkout, not for the copy: the sources run.
    MEMCACHED_OPERATOR_SNAPSHOT: 'off',
    ...extra,
  }
}

/** Runs one block to its end; resolves with its exit code and output. */
async function runBlock(code: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const p = start('bash', ['-euo', 'pipefail', '-c', code], cwd, env)
  const timer = setTimeout(() => void stop(p, 'SIGKILL'), 120_000)
  const exit = await p.exited
  clearTimeout(timer)
  return { code: exit, output: p.output() }
}

export const converged = /^default\/memcached-sample: size 3, ready 3, status\.nodes \["memcached-sample-[^"]+","memcached-sample-[^"]+","memcached-sample-[^"]+"\]$/m

/** Runs every `sh` block of `page` as written (see the top of this file). */
export async function runPage(t: Test, page: string): Promise<void> {
  const runnable = runnableBlocks(page)
  t.ok(runnable.length > 0, `${page} has commands to run`)
  for (const b of runnable.filter((b) => b.info[1] === 'needs-docker')) {
    for (const line of b.code.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))) t.match(line, /^(docker|kind) /, `${page}:${b.line} runs only docker and kind`)
  }
  const toRun = runnable.filter((b) => b.info[1] !== 'needs-docker')
  if (toRun.length === 0) return
  for (const b of toRun) t.ok(b.info.length === 1 || b.info[1] === 'long-running', `${page}:${b.line}: a known marker (${b.info.join(' ')})`)
  const dir = copyOfCheckout()
  const kubeconfig = join(tempDir('mc-docs-kubeconfig-'), 'kubeconfig')
  const sandbox = start(process.execPath, ['operator/cli/main.js', 'sandbox', '--kubeconfig-out', kubeconfig, '--pod-ready-delay', '100'], dir, environment())
  const background: Proc[] = []
  t.teardown(async () => {
    for (const p of background) await stop(p, 'SIGKILL')
    await stop(sandbox, 'SIGKILL')
  })
  const bin = linkedBin(dir)
  await eventually(`${page}: the sandbox and the sample`, () => (converged.test(sandbox.output()) ? true : undefined), 60_000)
  // And kubectl's own discovery cache, as on a machine that never saw this server: the cache is
  // kept by host and port, and another test's sandbox may have had this port before.
  const base = environment({ KUBECONFIG: kubeconfig, KUBECACHEDIR: tempDir('mc-docs-kubectl-cache-') })
  const env = { ...base, PATH: `${bin}:${base.PATH}` }
  for (const b of toRun) {
    const where = `${page}:${b.line}`
    if (b.info[1] === 'long-running') {
      const p = start('bash', ['-euo', 'pipefail', '-c', b.code], dir, env)
      background.push(p)
      await eventually(`${where}: some output`, () => (p.output() !== '' ? true : undefined), 30_000).catch(() => undefined)
      await new Promise((r) => setTimeout(r, 2000))
      t.equal(p.child.exitCode, null, `${where} is still running`, { output: p.output() })
      continue
    }
    const began = Date.now()
    const r = await runBlock(b.code, dir, env)
    t.equal(r.code, 0, `${where} (${((Date.now() - began) / 1000).toFixed(1)} s)`, { code: b.code, output: r.output })
  }
  for (const p of background.splice(0)) {
    const code = await stop(p)
    t.ok(code === 0 || code === null, 'a long-running command stops cleanly on SIGTERM', { output: p.output() })
  }
}
