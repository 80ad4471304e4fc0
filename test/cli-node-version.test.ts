// An old Node.js gets one line naming the version it needs, from npm install and from the executable.
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, realpathSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import { nodeTooOld, requiredNode } from '../operator/cli/node-version.js'

const root = resolve(import.meta.dirname, '..')
/** Makes the process believe it runs on another Node.js, before anything else loads. */
const pretend = (version: string) =>
  `data:text/javascript,Object.defineProperty(process,"version",{value:"v${version}"});Object.defineProperty(process.versions,"node",{value:"${version}"})`

t.test('the executable refuses a node older than package.json engines.node', async (t) => {
  const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node
  t.equal(engines, `>=${requiredNode}`, 'one range in package.json and in the executable')
  for (const v of ['20.20.2', '22.18.0', '18.0.0', '0.12.0']) t.match(nodeTooOld(v), new RegExp(`^memcached-operator: Node.js >= 22\\.19 is required, this is ${v.replace(/\./g, '\\.')}\\. .*node@24.*\\n$`), v)
  for (const v of ['22.19.0', '22.20.1', '24.21.0', '25.0.0', '100.0.0']) t.equal(nodeTooOld(v), undefined, v)
})

t.test('memcached-operator on an old node prints one line and exits 1, before loading any TypeScript', async (t) => {
  for (const command of [['render', '-f', 'kustomize/samples/cache_v1alpha1_memcached.yaml'], ['sandbox'], ['--help']]) {
    const r = spawnSync(process.execPath, ['--import', pretend('20.20.2'), 'operator/cli/main.js', ...command], { cwd: root, encoding: 'utf8' })
    t.equal(r.status, 1, command.join(' '))
    t.equal(r.stdout, '')
    t.equal(r.stderr.split('\n').length, 2, 'one line')
    t.match(r.stderr, /^memcached-operator: Node\.js >= 22\.19 is required, this is 20\.20\.2\./)
  }
  const ok = spawnSync(process.execPath, ['operator/cli/main.js', '--help'], { cwd: root, encoding: 'utf8' })
  t.equal(ok.status, 0, 'this node is new enough')
})

t.test('npm install on an old node stops with the engines range (engine-strict in .npmrc), no stack trace', async (t) => {
  const npmCli = process.env.npm_execpath?.endsWith('npm-cli.js') ? process.env.npm_execpath : realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim())
  const npm = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', pretend('20.20.2'), npmCli, 'install', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', ...args], { cwd: root, encoding: 'utf8' })
  const refused = npm()
  t.not(refused.status, 0)
  t.match(refused.stderr, /npm error notsup Required: \{"node":">=22\.19"\}/)
  t.match(refused.stderr, /npm error notsup Actual: +\{"node":"v20\.20\.2"/)
  t.notMatch(refused.stderr, /\n\s+at /, 'no stack trace')
  const lenient = npm('--engine-strict=false')
  t.equal(lenient.status, 0, 'without the project .npmrc, npm would only warn')
  t.match(lenient.stderr, /EBADENGINE/)
})
