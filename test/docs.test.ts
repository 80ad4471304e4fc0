/**
 * The commands a user copies from the README and docs/ keep working. This file checks the README's
 * set-up block against package.json and .ci/run, runs `npm start` as it is, resolves every
 * relative link and anchor, and holds that each page with commands has its own test file, which
 * runs them (test/support/docs.ts runPage: every ```sh block, in order, on a fresh sandbox).
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import t from 'tap'
import { eventually } from './support/operator.ts'
import { blocksOf, converged, copyOfCheckout, environment, pages, pageTestFile, root, runnableBlocks, start, stop } from './support/docs.ts'
import { MEMCACHED_PACKAGES } from './support/memcached.ts'

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

t.test('every page with commands has its test file, which runs that page', async (t) => {
  for (const page of pages) {
    if (runnableBlocks(page).length === 0) continue
    const file = pageTestFile(page)
    t.ok(existsSync(join(root, file)), `${page}: ${file}`)
    if (existsSync(join(root, file))) t.match(readFileSync(join(root, file), 'utf8'), `runPage(t, '${page}')`, `${file} runs ${page}`)
  }
})
