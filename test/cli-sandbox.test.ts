import { execFile } from 'node:child_process'
import { existsSync, writeFileSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import pino from 'pino'
import t, { type Test } from 'tap'
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
  t.match(await kubectl('get', 'mc'), /NAME\s+SIZE\s+READY\s+SERVERS\s+STATUS\s+AGE\nmemcached-sample\s+3\s+3\s+3\s+Reconciled\s/)
  await eventually('the nodes reported on stdout', () => (io.out().includes(`status.nodes ${JSON.stringify(nodes)}`) ? true : undefined))
  t.match(await kubectl('wait', '--for=condition=Ready', 'mc/memcached-sample', '--timeout=30s'), /memcached\.cache\.example\.com\/memcached-sample condition met/)
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

/** Runs each command under "Try:" as printed (kubectl being the real one), but for the endless watch. */
async function runSuggestions(t: Test, out: string, cwd: string): Promise<{ ran: string[]; again: () => Promise<string> }> {
  const lines = out.split('\n')
  const start = lines.indexOf('Try:') + 1
  const commands = lines.slice(start, lines.indexOf('', start)).map((l) => l.trim())
  const sh = async (command: string) => (await promisify(execFile)('sh', ['-c', `"$KUBECTL"${command.slice('kubectl'.length)}`], { cwd, env: { ...process.env, KUBECTL: kubectlPath() }, encoding: 'utf8' })).stdout
  const ran: string[] = []
  for (const command of commands) {
    if (command.endsWith(' -w')) continue
    t.match(command, /^kubectl --kubeconfig /, command)
    ran.push(await sh(command))
  }
  const nodes = commands.find((c) => c.includes('status.nodes')) ?? ''
  return { ran, again: () => sh(nodes) }
}

for (const sample of [true, false]) {
  t.test(`every command sandbox suggests works as printed (${sample ? 'with' : '--no-sample'})`, async (t) => {
    const cwd = tempDir('mc-sb-cwd-')
    const io = captureIO('', cwd)
    const running = await startSandboxCommand({ kubeconfigOut: kubeconfigIn(), podReadyDelay: '10', sample }, io, quiet)
    t.teardown(() => running.close())
    t.equal(io.out().includes('applied Memcached default/memcached-sample'), sample)
    const { ran, again } = await runSuggestions(t, io.out(), cwd)
    t.equal(ran.length, sample ? 4 : 5)
    if (!sample) t.match(ran[0], /memcached\.cache\.example\.com\/memcached-sample created/)
    t.match(ran.at(-1), /^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs/, 'auth can-i --list as a ServiceAccount')
    const nodes = await eventually('status.nodes of the five pods', async () => {
      const out = await again()
      return out !== '' && (JSON.parse(out) as string[]).length === 5 ? out : undefined
    })
    t.match(nodes, /^\["memcached-sample-/)
  })
}

t.test('--kubeconfig-for writes a kubeconfig that RBAC governs (kubectl auth whoami, a 403, can-i)', async (t) => {
  const dir = tempDir('mc-sb-for-')
  const sa = join(dir, 'sa.kubeconfig')
  const jane = join(dir, 'jane.kubeconfig')
  const io = captureIO('', dir)
  const running = await startSandboxCommand({ kubeconfigOut: kubeconfigIn(), operator: false, sample: false, kubeconfigFor: ['system:serviceaccount:default:app=sa.kubeconfig', 'jane,devs=jane.kubeconfig'] }, io, quiet)
  t.teardown(() => running.close())
  t.match(io.out(), /kubeconfig for system:serviceaccount:default:app: /)
  const asSa = kubectlFor(sa)
  t.match(await asSa('auth', 'whoami'), /Username\s+system:serviceaccount:default:app\n/)
  t.match(await kubectlFor(jane)('auth', 'whoami'), /Groups\s+\[devs system:authenticated\]/)
  const denied = await asSa('get', 'pods').then(() => undefined, (e: { stderr: string }) => e.stderr)
  t.equal(denied, 'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:app" cannot list resource "pods" in API group "" in the namespace "default"\n')
  t.equal(await asSa('auth', 'can-i', 'create', 'selfsubjectaccessreviews.authorization.k8s.io'), 'yes\n', 'what every authenticated user may')
  t.equal((await runCli(['sandbox', '--kubeconfig-for', 'jane'], captureIO())), 2, 'IDENTITY=FILE is required')
})

t.test('--watch-chart re-renders every CR when a chart file changes', async (t) => {
  const dir = chartWith({})
  const io = captureIO()
  const kubeconfig = kubeconfigIn()
  const running = await startSandboxCommand({ kubeconfigOut: kubeconfig, chart: dir, watchChart: true, podReadyDelay: '10' }, io, quiet)
  t.teardown(() => running.close())
  const kubectl = kubectlFor(kubeconfig)
  await eventually('the Deployment', async () => ((await kubectl('get', 'deploy', '-o', 'name')).includes('memcached-sample') ? true : undefined))
  // The pod template is a partial (_pod.ejs): a change there reaches every workload that includes it.
  const partial = join(dir, 'templates', '_pod.ejs')
  writeFileSync(partial, readFileSync(partial, 'utf8').replace('periodSeconds: 5', 'periodSeconds: 7'))
  await eventually('the new probe period applied', async () => ((await kubectl('get', 'deploy', 'memcached-sample', '-o', 'jsonpath={.spec.template.spec.containers[0].readinessProbe.periodSeconds}')) === '7' ? true : undefined))
  const file = join(dir, 'templates', 'deployment.ejs')
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

t.test('--openshift: the operator finds the platform and the sample runs under restricted-v2 with a UID from default’s range', async (t) => {
  const io = captureIO()
  const kubeconfig = kubeconfigIn()
  const running = await startSandboxCommand({ kubeconfigOut: kubeconfig, podReadyDelay: '10', openshift: true }, io, quiet)
  t.teardown(() => running.close())
  const kubectl = kubectlFor(kubeconfig)
  t.match(await kubectl('wait', '--for=condition=Ready', 'mc/memcached-sample', '--timeout=30s'), /condition met/)
  const uids = (await kubectl('get', 'pods', '-o', 'jsonpath={.items[*].spec.containers[0].securityContext.runAsUser}')).split(' ')
  t.same(uids, ['1000000000', '1000000000', '1000000000'])
  t.match(await kubectl('api-resources', '--api-group=security.openshift.io'), /securitycontextconstraints\s+scc\s+security\.openshift\.io\/v1\s+false\s+SecurityContextConstraints/, 'SecurityContextConstraints are served')
})
