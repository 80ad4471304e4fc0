/**
 * `npm run bench:rollout`: a staged rollout of a fleet in the sandbox. N Memcached CRs
 * (BENCH_CRS, default 1,000; size 1) converge on the bundled chart with the operator as `run`
 * starts it (rollouts polled every 200 ms), but with no damage budget of pod restarts
 * (`--max-restarts 0`; BENCH_MAX_RESTARTS sets one). Then a Rollout to revision B (one pod annotation more)
 * in four waves of 25 %, BENCH_IN_FLIGHT CRs in flight (default 50), until it succeeded; then a
 * Rollout to revision C (an image whose pods the sandbox's kubelet runs and never reports ready: a
 * NeverReady pod-failure rule) with a 10 s health deadline, until it halted in its first wave, and
 * the time until that wave runs B again.
 * Prints figures (seconds, requests, the final states); asserts nothing.
 */
import pino from 'pino'
import { chartRevisionCRD } from '../../operator/api/chart-revision-crd.ts'
import { memcachedCRD } from '../../operator/api/crd.ts'
import { rolloutCRD } from '../../operator/api/rollout-crd.ts'
import type { KubeObject } from '../../operator/controller/client.ts'
import { startOperator } from '../../operator/cli/run.ts'
import { chartFromFiles, loadChart, readChartFiles } from '../../operator/render/chart.ts'
import { revisionObject } from '../../operator/api/chart-revision.ts'
import { startSandbox } from '../../operator/sandbox/index.ts'
import { chartWith } from '../support/chart.ts'
import { captureIO } from '../support/io.ts'
import { clientFor } from '../support/operator.ts'

const N = Number(process.env.BENCH_CRS ?? 1000)
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 50)
const MAX_RESTARTS = process.env.BENCH_MAX_RESTARTS ?? '0'
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const RO = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Rollout' } as const
type Cr = { metadata: { name: string; labels?: Record<string, string> }; spec?: { chartRevision?: string }; status?: { chartRevision?: string; observedGeneration?: number } }

const chart = loadChart()
const sandbox = await startSandbox({ podReadyDelayMs: 10, requestLogSize: 0, podFailures: [{ image: ':unready$', failure: 'NeverReady' }], installCRDs: [memcachedCRD(chart), chartRevisionCRD(), rolloutCRD()] as unknown as KubeObject[] })
const user = clientFor(sandbox, 'bench', 'bench')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const fleet = async (): Promise<Cr[]> => (await user.list(MC)).items as unknown as Cr[]
async function until<T>(what: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const v = await what()
    if (v !== undefined) return v
    await sleep(250)
  }
}
const revisionOf = (files: Record<string, string>) => {
  const dir = chartWith(files)
  return revisionObject(chartFromFiles(readChartFiles(dir), dir))
}

let started = performance.now()
let next = 0
await Promise.all(
  Array.from({ length: 32 }, async () => {
    while (next < N) {
      const i = next++
      await user.create({ ...MC, metadata: { name: `mc-${String(i).padStart(5, '0')}`, namespace: 'default' }, spec: { size: 1 } })
    }
  }),
)
// The rollout alone: the damage budget (50 pod restarts per 10 minutes by default) would hold every
// CR past the 50th of a restart for the window; BENCH_MAX_RESTARTS measures with one.
const operator = await startOperator({ kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '8', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0', rolloutPollMs: 200, maxRestarts: MAX_RESTARTS }, captureIO(), pino({ level: 'silent' }))
await until(async () => ((await fleet()).every((cr) => cr.status?.chartRevision !== undefined && cr.status.observedGeneration !== undefined) ? true : undefined))
const figures: Record<string, unknown> = { crs: N, inFlight: IN_FLIGHT, maxRestarts: Number(MAX_RESTARTS), convergeSeconds: +((performance.now() - started) / 1000).toFixed(1) }

const values = readChartFiles(chart.dir).get('values.yaml')!
const b = revisionOf({ 'values.yaml': values.replace('podAnnotations: {}', 'podAnnotations: {rollout: b}') })
const c = revisionOf({ 'values.yaml': values.replace('tag: 1.6.38-alpine', 'tag: unready') })
await user.create(b as unknown as KubeObject)
await user.create(c as unknown as KubeObject)
const quarter = { percent: 25 }

let requests = sandbox.requests.counts().total
started = performance.now()
await user.create({ ...RO, metadata: { name: 'to-b' }, spec: { revision: b.metadata.name, maxInFlight: IN_FLIGHT, healthDeadline: '5m', waves: [quarter, quarter, quarter, quarter] } })
const toB = await until(async () => {
  const s = (await user.get({ ...RO, name: 'to-b' })).status as { phase?: string; wave?: string; progress?: string } | undefined
  return s?.phase === 'Succeeded' || s?.phase === 'Halted' || s?.phase === 'Failed' ? s : undefined
})
const onB = (await fleet()).filter((cr) => cr.status?.chartRevision === b.metadata.name && cr.spec?.chartRevision === undefined).length
figures['toB'] = { seconds: +((performance.now() - started) / 1000).toFixed(1), requests: sandbox.requests.counts().total - requests, phase: toB.phase, wave: toB.wave, progress: toB.progress, onBWithoutPin: onB }

requests = sandbox.requests.counts().total
started = performance.now()
await user.create({ ...RO, metadata: { name: 'to-c' }, spec: { revision: c.metadata.name, maxInFlight: IN_FLIGHT, healthDeadline: '10s', waves: [quarter, quarter, quarter, quarter] } })
const toC = await until(async () => {
  const s = (await user.get({ ...RO, name: 'to-c' })).status as { phase?: string; wave?: string; message?: string; members?: { memcached: string; state: string }[] } | undefined
  return s?.phase === 'Halted' || s?.phase === 'Succeeded' || s?.phase === 'Failed' ? s : undefined
})
const halted = performance.now() - started
const wave = new Set((toC.members ?? []).map((m) => m.memcached.split('/')[1]))
await until(async () => ((await fleet()).filter((cr) => wave.has(cr.metadata.name)).every((cr) => cr.status?.chartRevision === b.metadata.name) ? true : undefined))
const crs = await fleet()
figures['toC'] = {
  haltSeconds: +(halted / 1000).toFixed(1),
  returnedSeconds: +((performance.now() - started) / 1000).toFixed(1),
  requests: sandbox.requests.counts().total - requests,
  phase: toC.phase,
  wave: toC.wave,
  firstWave: wave.size,
  laterWavesTouched: crs.filter((cr) => !wave.has(cr.metadata.name) && (cr.spec?.chartRevision !== undefined || cr.status?.chartRevision !== b.metadata.name)).length,
  message: toC.message,
}
console.log(JSON.stringify(figures, null, 2))
await operator.stop()
user.close()
await sandbox.close()
