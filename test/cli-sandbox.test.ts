import { execFile } from 'node:child_process'
import { existsSync, writeFileSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import pino from 'pino'
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { runSandbox, startSandboxCommand } from '../operator/cli/sandbox.ts'
import { chartWith } from './support/chart.ts'
import { eventually } from './support/operator.ts'
import { captureIO } from './support/io.ts'
import { kubectlPath } from './support/tools.ts'
import { tempDir } from './support/tmp.ts'

const root = resolve(import.meta.dirname, '..')
const quiet = pino({ level: 'silent' })
const kubeconfigIn = () => join(tempDir('mc-sb-'), 'kubeconfig')
// Asynchronously: the sandbox answers from this very process.
const kubectlFor = (kubeconfig: string) => async (...args: string[]) => (await promisify(execFile)(kubectlPath(), ['--kubeconfig', kubeconfig, ...args], { cwd: root, encoding: 'utf8' })).stdout

t.test('sandbox runs the operator and applies the sample: status.nodes fills with pod names', async (t) => {
  const io = captureIO()
  const kubeconfig = kubeconfigIn()
  const running = await startSandboxCommand({ kubeconfigOut: kubeconfig, podReadyDelay: '10' }, io, quiet)
  t.teardown(() => running.close())
  t.match(io.out(), new RegExp(`kubeconfig: ${kubeconfig}\\n`))
  t.match(io.out(), /applied Memcached default\/memcached-sample/)
  const kubectl = kubectlFor(kubeconfig)
  t.equal(await kubectl('get', 'crd', 'memcacheds.cache.example.com', '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'), 'True')
  const nodes = await eventually('status.nodes', async () => {
    const out = await kubectl('get', 'mc', 'memcached-sample', '-o', 'jsonpath={.status.nodes}')
    return out && JSON.parse(out).length === 3 ? (JSON.parse(out) as string[]) : undefined
  })
  t.same(nodes, (await kubectl('get', 'pods', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').sort())
  t.match(await kubectl('get', 'mc'), /NAME\s+SIZE\s+READY\s+AGE\nmemcached-sample\s+3\s+3\s/)
  await eventually('the nodes reported on stdout', () => (io.out().includes(`status.nodes ${JSON.stringify(nodes)}`) ? true : undefined))
})

t.test('--no-operator starts the cluster alone; --no-sample applies nothing', async (t) => {
  const io = captureIO()
  const kubeconfig = kubeconfigIn()
  const running = await startSandboxCommand({ kubeconfigOut: kubeconfig, operator: false, sample: false }, io, quiet)
  t.teardown(() => running.close())
  t.equal(running.operator, undefined)
  t.match(io.out(), /no operator: run one with {2}npx memcached-operator run --kubeconfig /)
  t.equal(await kubectlFor(kubeconfig)('get', 'mc', '-o', 'name'), '')
})

t.test('--watch-chart re-renders every CR when a chart file changes', async (t) => {
  const dir = chartWith({})
  const io = captureIO()
  const kubeconfig = kubeconfigIn()
  const running = await startSandboxCommand({ kubeconfigOut: kubeconfig, chart: dir, watchChart: true, podReadyDelay: '10' }, io, quiet)
  t.teardown(() => running.close())
  const kubectl = kubectlFor(kubeconfig)
  await eventually('the Deployment', async () => ((await kubectl('get', 'deploy', '-o', 'name')).includes('memcached-sample') ? true : undefined))
  const file = join(dir, 'templates', 'deployment.ejs')
  writeFileSync(file, readFileSync(file, 'utf8').replace('periodSeconds: 5', 'periodSeconds: 7'))
  await eventually('the new probe period applied', async () => ((await kubectl('get', 'deploy', 'memcached-sample', '-o', 'jsonpath={.spec.template.spec.containers[0].readinessProbe.periodSeconds}')) === '7' ? true : undefined))
  writeFileSync(file, '<% if ( %>')
  await eventually('the broken chart reported', () => (io.err().includes('not reloaded') ? true : undefined))
  t.match(io.err(), /templates\/deployment\.ejs:1: /)
})

t.test('sandbox runs until it is signalled, then closes', async (t) => {
  const io = captureIO()
  const controller = new AbortController()
  const kubeconfig = kubeconfigIn()
  const running = runSandbox({ kubeconfigOut: kubeconfig, operator: false, sample: false }, io, controller.signal)
  await eventually('started', () => (io.out().includes('Stop with Ctrl-C') ? true : undefined))
  const url = /serving on (\S+)/.exec(io.out())![1]!
  t.equal((await fetch(`${url}/version`, { headers: { Authorization: 'Bearer sandbox' } })).status, 200)
  t.equal((await fetch(`${url}/version`)).status, 401, 'requests without a token are not served')
  controller.abort()
  t.equal(await running, 0)
  await t.rejects(fetch(`${url}/version`), 'the server is gone')
  t.ok(existsSync(kubeconfig), 'a kubeconfig written where asked is left for the user')
})

t.test('sandbox flags are checked', async (t) => {
  for (const args of [['sandbox', '--port', 'x'], ['sandbox', '--port', '70000'], ['sandbox', '--pod-ready-delay', '-1']]) {
    const io = captureIO()
    t.equal(await runCli(args, io), 2, args.join(' '))
  }
})
