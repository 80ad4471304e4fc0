/**
 * `npm run bench:fleet`: the whole fleet at once, as a user asks about it. N Memcached CRs
 * (BENCH_CRS, default 1,000; sizes 1–3) in the sandbox, their objects applied by the operator,
 * which is then stopped. Then, each timed as a whole process with real kubectl:
 * - `kubectl get mc -A -o yaml | memcached-operator render -f -`;
 * - `memcached-operator diff --all` (what a chart change would do to every CR), with its requests;
 * - `helm template` once per CR, the way a helm user has to (BENCH_HELM_RUNS of them, default N;
 *   fewer are extrapolated to N).
 * Prints figures; asserts nothing.
 */
import { spawn } from 'node:child_process'
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { memcachedCRD } from '../../operator/api/crd.ts'
import type { KubeObject } from '../../operator/controller/client.ts'
import { loadChart } from '../../operator/render/chart.ts'
import { startSandbox } from '../../operator/sandbox/index.ts'
import { clientFor, startOperatorOn } from '../support/operator.ts'
import { helmPath, kubectlPath } from '../support/tools.ts'

const root = resolve(import.meta.dirname, '..', '..')
const N = Number(process.env.BENCH_CRS ?? 1000)
const HELM_RUNS = Math.min(N, Number(process.env.BENCH_HELM_RUNS ?? N))
const bin = join(root, 'operator/cli/memcached-operator')
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` }

/** Runs a shell command line without blocking this process (it serves the sandbox); returns its wall time and output size. */
function timed(line: string, extraEnv: Record<string, string> = {}): Promise<{ ms: number; status: number | null; bytes: number; stderr: string }> {
  return new Promise((ok, fail) => {
    const start = process.hrtime.bigint()
    const child = spawn('sh', ['-c', line], { cwd: root, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] })
    let bytes = 0
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (bytes += d.length))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.on('error', fail)
    child.on('close', (status) => ok({ ms: Number(process.hrtime.bigint() - start) / 1e6, status, bytes, stderr }))
  })
}

const chart = loadChart()
const sandbox = await startSandbox({ podReadyDelayMs: 0, requestLogSize: 1_000_000, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
const user = clientFor(sandbox, 'bench/1', 'bench')
console.log(`${N} Memcached CRs (sizes 1–3) in the sandbox; node ${process.version}\n`)
const operator = await startOperatorOn(sandbox, { concurrency: 8 })
for (let i = 0; i < N; i += 100) {
  await Promise.all(Array.from({ length: Math.min(100, N - i) }, (_, j) => user.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: `mc-${i + j}`, namespace: 'default' }, spec: { size: 1 + ((i + j) % 3) } })))
}
for (;;) {
  const deployments = (await user.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items.length
  if (deployments >= N) break
  await new Promise((r) => setTimeout(r, 200))
}
await operator.stop()
console.log('the operator applied every CR\'s objects and was stopped\n')

const kc = `--kubeconfig ${sandbox.kubeconfigPath}`
const kubectl = kubectlPath()
const helmDir = mkdtempSync(join(tmpdir(), 'bench-fleet-'))
process.on('exit', () => rmSync(helmDir, { recursive: true, force: true }))
const helm = join(helmDir, 'helm')
copyFileSync(helmPath(), helm)
chmodSync(helm, 0o755)

const row = (label: string, ms: number, runs = N) => console.log(`  ${label.padEnd(62)} ${(ms / 1000).toFixed(2).padStart(7)} s  ${(ms / runs).toFixed(2).padStart(7)} ms per CR`)
const check = (what: string, r: { status: number | null; stderr: string }, ok: number[] = [0]) => {
  if (!ok.includes(r.status ?? -1)) throw new Error(`${what} exited ${r.status}: ${r.stderr}`)
}

const list = await timed(`${kubectl} ${kc} get mc -A -o yaml > ${join(helmDir, 'fleet.yaml')}`)
check('kubectl get', list)
row('kubectl get mc -A -o yaml (alone)', list.ms)
const render = await timed(`${kubectl} ${kc} get mc -A -o yaml | ${bin} render -f -`)
check('render', render)
row(`kubectl get mc -A -o yaml | memcached-operator render -f -`, render.ms)
console.log(`    ${(render.bytes / 1e6).toFixed(1)} MB of manifests`)

sandbox.requests.reset()
const diff = await timed(`${bin} diff --all ${kc}`)
check('diff --all', diff, [0, 1])
row('memcached-operator diff --all (no difference)', diff.ms)
const byVerb = new Map<string, number>()
for (const r of sandbox.requests.log()) if (r.userAgent?.startsWith('memcached-operator-diff')) byVerb.set(`${r.verb}${r.verb === 'patch' ? ' (dry run)' : ''}`, (byVerb.get(`${r.verb}${r.verb === 'patch' ? ' (dry run)' : ''}`) ?? 0) + 1)
console.log(`    requests: ${[...byVerb].map(([v, n]) => `${n} ${v}`).join(', ')}`)
const changed = await timed(`${bin} diff --all ${kc} --set memoryMB=128`)
check('diff --all --set', changed, [1])
row('memcached-operator diff --all --set memoryMB=128 (every CR differs)', changed.ms)

let helmMs = 0
for (let i = 0; i < HELM_RUNS; i++) {
  const r = await timed(`${helm} template mc-${i} ${join(root, 'test/bench/helm-memcached')} --namespace default --set size=${1 + (i % 3)}`)
  check('helm template', r)
  helmMs += r.ms
}
row(`helm template, once per CR${HELM_RUNS < N ? ` (${HELM_RUNS} runs, extrapolated)` : ''}`, (helmMs / HELM_RUNS) * N)
console.log(`  ratio render / helm template per CR: ${(render.ms / ((helmMs / HELM_RUNS) * N)).toFixed(3)}`)

user.close()
await sandbox.close()
