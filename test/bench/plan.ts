/**
 * `npm run bench:plan`: `memcached-operator plan` of a fleet. N Memcached CRs (BENCH_CRS, default
 * 10,000; sizes 1–3) in the sandbox (without its simulated kubelet: a plan reads the operator's
 * objects, not pods), their objects applied by the operator on the bundled chart, which is then
 * stopped. Then, each timed as a whole process (the sandbox serves it from this one):
 * - `plan --chart <the bundled chart>`: the no-op plan (every object compared, nothing dry-run);
 * - `plan --chart <a pod-template change>`: every Workload dry-run, every CR a pod restart.
 * Prints figures; asserts nothing.
 */
import { spawn } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { memcachedCRD } from '../../operator/api/crd.ts'
import type { KubeObject } from '../../operator/controller/client.ts'
import { loadChart, readChartFiles } from '../../operator/render/chart.ts'
import { startSandbox } from '../../operator/sandbox/index.ts'
import { chartWith } from '../support/chart.ts'
import { clientFor, startOperatorOn } from '../support/operator.ts'

const root = resolve(import.meta.dirname, '..', '..')
const N = Number(process.env.BENCH_CRS ?? 10_000)
const bin = join(root, 'operator/cli/memcached-operator')
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, NODE_OPTIONS: [process.env.BENCH_PLAN_NODE_OPTIONS ?? '', process.env.BENCH_PROFILE ? `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE}` : ''].join(' ').trim() }

/** Runs the CLI without blocking this process (it serves the sandbox); its wall time, exit code and output. */
function timed(args: string[]): Promise<{ ms: number; status: number | null; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const start = process.hrtime.bigint()
    const child = spawn(bin, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.on('error', fail)
    child.on('close', (status) => ok({ ms: Number(process.hrtime.bigint() - start) / 1e6, status, stdout, stderr }))
  })
}

const chart = loadChart()
const sandbox = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
const user = clientFor(sandbox, 'bench', 'bench')
let started = performance.now()
let next = 0
await Promise.all(
  Array.from({ length: 32 }, async () => {
    while (next < N) {
      const i = next++
      await user.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: `mc-${i}`, namespace: 'default' }, spec: { size: 1 + (i % 3) } })
    }
  }),
)
const created = performance.now() - started
started = performance.now()
const operator = await startOperatorOn(sandbox, { concurrency: 8 })
for (;;) {
  const items = (await user.list({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' })).items
  if (items.every((cr) => (cr.status as { observedGeneration?: number } | undefined)?.observedGeneration === cr.metadata.generation)) break
  await new Promise((r) => setTimeout(r, 500))
}
const converged = performance.now() - started
await operator.stop()
user.close()

const restart = chartWith({ 'values.yaml': readChartFiles(chart.dir).get('values.yaml')!.replace('podAnnotations: {}', 'podAnnotations: {rollout: "2"}') })
const figures: Record<string, unknown> = { crs: N, createSeconds: +(created / 1000).toFixed(1), convergeSeconds: +(converged / 1000).toFixed(1) }
for (const [label, dir] of [['noop', chart.dir], ['restart', restart]] as const) {
  const before = sandbox.requests.counts().total
  const r = await timed(['plan', '--kubeconfig', sandbox.kubeconfigPath, '--chart', dir, '-o', 'json'])
  if (r.status !== 0 && r.status !== 1) throw new Error(`plan exited ${r.status}: ${r.stderr}`)
  const totals = (JSON.parse(r.stdout) as { totals: Record<string, number> }).totals
  figures[label] = { seconds: +(r.ms / 1000).toFixed(2), requests: sandbox.requests.counts().total - before, totals: Object.fromEntries(Object.entries(totals).filter(([, n]) => n > 0)) }
}
console.log(JSON.stringify(figures, null, 2))
await sandbox.close()
