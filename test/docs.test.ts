/**
 * The commands a user copies from the README and docs/ keep working: every ```sh block runs here,
 * in bash with `set -euo pipefail`, from a copy of the checkout, against a sandbox started as
 * `npm start` starts it (the operator running, the sample CR converged), with real kubectl on the
 * PATH and KUBECONFIG pointing at the sandbox. Each page gets a fresh sandbox and kubectl cache;
 * its blocks run in order. `sh long-running` blocks are started and left running for the page's
 * later blocks; `sh needs-docker` blocks are not run (no Docker engine here) and may hold only
 * docker and kind commands. The README's set-up block is checked against package.json and .ci/run, and `npm start`
 * is run as it is. Relative links and anchors must resolve.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, readdirSync, readFileSync, symlinkSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import t from 'tap'
import { eventually } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'
import { MEMCACHED_PACKAGES } from './support/memcached.ts'
import { helmPath, kubectlPath } from './support/tools.ts'

const root = resolve(import.meta.dirname, '..')
// Every page starts a sandbox and runs its commands one by one.
t.setTimeout(600_000)
const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

interface Block {
  page: string
  line: number
  info: string[]
  code: string
}

/** The fenced code blocks of a Markdown page, indented ones (in list items) included. */
function blocksOf(page: string): Block[] {
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

let copy: string | undefined
/**
 * A copy of the checkout to run commands in (the docs may write files), sharing node_modules; one
 * for the whole file, so that node's compile cache of its sources serves every page.
 */
function copyOfCheckout(): string {
  if (copy) return copy
  const dir = (copy = tempDir('mc-docs-'))
  const skip = new Set(['node_modules', '.git', '.tap', 'coverage'])
  for (const entry of readdirSync(root)) if (!skip.has(entry)) cpSync(join(root, entry), join(dir, entry), { recursive: true })
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  return dir
}

interface Proc {
  child: ChildProcess
  output(): string
  exited: Promise<number | null>
}

/** Starts a command in its own process group (so that a signal reaches all of it, as Ctrl-C does). */
function start(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Proc {
  const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
  return { child, output: () => out, exited }
}

async function stop(p: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (p.child.exitCode === null && p.child.signalCode === null) process.kill(-p.child.pid!, signal)
  return p.exited
}

function environment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
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

const converged = /^default\/memcached-sample: size 3, ready 3, status\.nodes \["memcached-sample-[^"]+","memcached-sample-[^"]+","memcached-sample-[^"]+"\]$/m

t.test("the README's set-up commands are the package's own, and CI runs nothing else", async (t) => {
  const setup = blocksOf('README.md').find((b) => b.info[0] === 'sh')
  t.ok(setup, 'the README has a sh block')
  const commands = setup!.code.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean)
  t.same(commands, ['npm install && npm start', 'npm test'], 'the first sh block is the set-up')
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  t.match(pkg.scripts.start, /operator\/cli\/main\.js sandbox$/)
  t.match(pkg.scripts.prepare, /test\/support\/prepare\.ts/, 'npm install readies the tests')
  const ci = readFileSync(join(root, '.ci/run'), 'utf8')
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
  // Commands only: at the start of a line or after `;`, `&&`, `|` or `$(` (not "the npm registry" in a message).
  const npmCalls = [...ci.matchAll(/(?:^|[;&|]|\$\()\s*(npx|npm)\s+(\S+)/gm)].map((m) => `${m[1]} ${m[2]}`)
  // `npm install --prefix … node@24` is the Node.js download; the project's own steps are ci and test.
  t.same([...new Set(npmCalls.filter((c) => c !== 'npm install' && !c.startsWith('npm --version')))].sort(), ['npm ci', 'npm test'])
  t.match(ci, /npm install --no-save --no-audit --no-fund --prefix "\$node24" node@24/, 'the only npm install is Node.js itself')
  // Besides npm: the packages the memcached conformance tests need, the same the README tells a contributor to install.
  const packages = MEMCACHED_PACKAGES.join(' ')
  t.match(ci, `mc_packages="${packages}"`, 'CI installs the memcached tests\' packages')
  t.same([...ci.matchAll(/apt-get install[^\n]*/g)].map((m) => m[0]), ['apt-get install -y -qq $mc_packages >/dev/null; } || { echo "apt-get install $mc_packages failed"; echo "0 passed, 1 failed"; exit 1; }'], 'and installs nothing else')
  t.match(readFileSync(join(root, 'README.md'), 'utf8').replace(/\s+/g, ' '), `apt-get install -y ${packages}`, 'the README names the same command')
})

t.test('npm start runs the operator on the sandbox, applies the sample and prints its status.nodes; Ctrl-C stops it', async (t) => {
  const dir = copyOfCheckout()
  const p = start('npm', ['start'], dir, environment())
  t.teardown(() => stop(p, 'SIGKILL'))
  await eventually('the sample converged', () => (converged.test(p.output()) ? true : undefined), 60_000)
  t.match(p.output(), /^kubeconfig: \S+$/m)
  const url = /^sandbox cluster serving on (\S+)$/m.exec(p.output())?.[1]
  t.equal((await fetch(`${url}/version`, { headers: { Authorization: 'Bearer sandbox' } })).status, 200, 'the sandbox answers')
  // Ctrl-C reaches npm and the operator alike: npm reports the signal, the operator stops cleanly.
  await stop(p, 'SIGINT')
  t.match(p.output(), /^stopping the sandbox$/m)
  t.notMatch(p.output(), /\n\s+at /, 'no stack trace')
  await t.rejects(fetch(`${url}/version`), 'the server is gone')
})

t.test('relative links and anchors in the README and docs/ resolve', async (t) => {
  const slug = (heading: string) =>
    heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\- _]/gu, '')
      .replace(/ /g, '-')
  for (const page of pages) {
    const text = readFileSync(join(root, page), 'utf8')
    const anchorsOf = (file: string) => {
      const body = readFileSync(file, 'utf8').replace(/^( *)```[\s\S]*?^\1```/gm, '')
      return new Set([...[...body.matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1]!.replace(/`/g, ''))), ...[...body.matchAll(/<a id="([^"]+)"/g)].map((m) => m[1]!)])
    }
    for (const m of text.replace(/^( *)```[\s\S]*?^\1```/gm, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!
      if (/^[a-z]+:/.test(target)) continue
      const [file, anchor] = target.split('#') as [string, string | undefined]
      const path = file === '' ? join(root, page) : resolve(dirname(join(root, page)), file)
      t.ok(existsSync(path), `${page}: ${target}`)
      if (anchor !== undefined && existsSync(path) && path.endsWith('.md')) t.ok(anchorsOf(path).has(anchor), `${page}: ${target} (anchor)`)
    }
  }
})

for (const page of pages) {
  const blocks = blocksOf(page).filter((b) => b.info[0] === 'sh')
  // The README's set-up block is the test above; `npm install` is what brought this test here.
  const runnable = page === 'README.md' ? blocks.slice(1) : blocks
  if (runnable.length === 0) continue
  t.test(`${page}: every sh block works as written`, async (t) => {
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
    await eventually(`${page}: the sandbox and the sample`, () => (converged.test(sandbox.output()) ? true : undefined), 60_000)
    // And kubectl's own discovery cache, as on a machine that never saw this server: the cache is
    // kept by host and port, and another test's sandbox may have had this port before.
    const env = environment({ KUBECONFIG: kubeconfig, KUBECACHEDIR: tempDir('mc-docs-kubectl-cache-') })
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
  })
}
