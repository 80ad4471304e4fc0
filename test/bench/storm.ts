/**
 * A 429 storm: Memcacheds the operator has settled are changed while the sandbox refuses each
 * write of the operator 429 for a window: the applies of every chart kind, status writes and
 * events. The change is an annotation of each CR's Service. The figures are the requests per second the operator sent in the window, by code,
 * beside its configured --kube-api-qps/--kube-api-burst, the rejections per CR, the status writes
 * and events it attempted, and how long after the window every changed CR carried the change and
 * was Ready again. `stormWindow` is the phase, run by `npm run bench:operator` against its fleet
 * and by `npm run bench:storm` alone.
 *
 * `npm run bench:storm`: the operator (`run`, in-process, with its client-side rate limit) settles
 * BENCH_CRS Memcacheds (200) of BENCH_SIZE pods (1) in a sandbox of its own, then the storm. BENCH_WINDOW_S (10),
 * BENCH_QPS (20), BENCH_BURST (30), BENCH_RETRY_AFTER (the 429s' Retry-After seconds, default 0: a
 * server that sheds without asking for a wait, the case the rate limit alone bounds; API Priority
 * and Fairness sends 1), BENCH_CONCURRENCY (4), BENCH_LOG_LEVEL (the operator's log level, default
 * silent). Prints figures; asserts nothing.
 */
import pino from 'pino'
import { memcachedCRD } from '../../operator/api/crd.ts'
import { startOperator } from '../../operator/cli/run.ts'
import type { KubeClient, KubeObject } from '../../operator/controller/client.ts'
import { type Chart, loadChart } from '../../operator/render/chart.ts'
import { type Sandbox, startSandbox } from '../../operator/sandbox/index.ts'
import { captureIO } from '../support/io.ts'
import { clientFor, eventually, runOptions } from '../support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const

/** What a storm runs against: an operator that has settled `names` (Memcacheds in `default`). */
export interface StormBed {
  sandbox: Sandbox
  chart: Chart
  /** The user that changes the CRs. */
  user: KubeClient
  /** The CRs to change. */
  names: readonly string[]
  /** The operator's configured rate limit, for the figures. */
  qps: number
  burst: number
  /** The operator's /metrics text. */
  metrics(): Promise<string>
}

/** The annotation the storm changes on each CR's Service (spec.service.annotations): an in-place update of one object, no pod touched. */
const MARK = 'bench.example.com/storm'

/** Whether a CR's Service carries the storm's mark `mark` and the CR is observed and Ready (read from the store: no request counted). */
function settledAt(sandbox: Sandbox, name: string, mark: string): boolean {
  const o = sandbox.cluster.store.get('cache.example.com/memcacheds', 'default', name)?.shared()
  const svc = sandbox.cluster.store.get('/services', 'default', name)?.shared()
  if (o === undefined || svc === undefined) return false
  const st = o.status as { observedGeneration?: number; conditions?: { type: string; status: string }[] } | undefined
  return svc.metadata.annotations?.[MARK] === mark && st?.observedGeneration === o.metadata.generation && (st?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false)
}

/** Waits until every CR of `names` has its Service marked `mark`, observed and Ready. */
export async function settled(sandbox: Sandbox, names: readonly string[], mark: string, timeoutMs: number): Promise<void> {
  await eventually(`${names.length} CRs' Services marked ${mark}`, () => {
    const left = names.filter((n) => !settledAt(sandbox, n, mark))
    if (left.length === 0) return true
    // On a timeout, the error says how many are left and what the first of them reports.
    const o = sandbox.cluster.store.get('cache.example.com/memcacheds', 'default', left[0]!)?.shared()
    throw new Error(`${left.length} not settled; ${left[0]}: generation ${o?.metadata.generation}, status ${JSON.stringify(o?.status)}`)
  }, timeoutMs)
}

/**
 * Changes every CR of the bed under a 429 storm — an annotation of its Service, by a forced apply
 * of `spec.service.annotations` by a field manager of its own — and returns the figures. (Not
 * `memoryMB`: its in-place resize asks memcached, which no sandbox pod runs, and the retries of a
 * resize that cannot succeed are not what the storm measures.)
 */
export async function stormWindow(bed: StormBed, opts: { windowS: number; retryAfterS: number; mark: string }): Promise<Record<string, number | string>> {
  const { sandbox, names } = bed
  const ua = /^memcached-operator\//
  const kinds = [...new Set(bed.chart.kinds.map((k) => (k.apiVersion.includes('/') ? `${k.resource}.${k.apiVersion.split('/')[0]}` : k.resource)))]
  sandbox.faults.set({ throttleRate: 1, retryAfterS: opts.retryAfterS, verbs: ['create', 'update', 'patch', 'delete'], resources: [...kinds, 'events', 'events.events.k8s.io', 'memcacheds/status'] })
  const from = sandbox.requests.log().length
  const t0 = performance.now()
  for (const name of names) await bed.user.apply({ ...MC, metadata: { name, namespace: 'default' }, spec: { service: { annotations: { [MARK]: opts.mark } } } }, { force: true })
  await new Promise((r) => setTimeout(r, opts.windowS * 1000 - (performance.now() - t0)))
  const window = sandbox.requests.log().slice(from).filter((r) => ua.test(r.userAgent ?? ''))
  const secs = (performance.now() - t0) / 1000
  sandbox.faults.set({})
  const t1 = performance.now()
  await settled(sandbox, names, opts.mark, 600_000)
  const recovered = (performance.now() - t1) / 1000
  const byCode: Record<string, number> = {}
  for (const r of window) byCode[r.code] = (byCode[r.code] ?? 0) + 1
  const rejected = byCode['429'] ?? 0
  const statusWrites = window.filter((r) => r.resource === 'memcacheds' && r.subresource === 'status').length
  const events = window.filter((r) => r.resource === 'events').length
  const counted429 = [...(await bed.metrics()).matchAll(/^rest_client_requests_total\{code="429"[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0)
  return {
    'CRs changed in the window': names.length,
    '--kube-api-qps / --kube-api-burst': bed.qps > 0 ? `${bed.qps} / ${bed.burst}` : 'none (no client-side limit)',
    'Retry-After (s)': opts.retryAfterS,
    'window (s)': Number(secs.toFixed(1)),
    'requests sent in the window': window.length,
    'requests per second': Number((window.length / secs).toFixed(1)),
    'bound: qps + burst / window': bed.qps > 0 ? Number((bed.qps + bed.burst / secs).toFixed(1)) : 'none (no client-side limit)',
    'of which 429': rejected,
    'rejected per CR per second': Number((rejected / names.length / secs).toFixed(3)),
    'status writes attempted': statusWrites,
    'events attempted': events,
    'rest_client_requests_total{code="429"} (operator, whole run)': counted429,
    'seconds after the window until every CR carried the change, Ready': Number(recovered.toFixed(1)),
  }
}

/** Prints a storm's figures, one per line. */
export function printFigures(figures: Record<string, number | string>, indent = ''): void {
  for (const [k, v] of Object.entries(figures)) console.log(`${indent}${k.padEnd(66)} ${v}`)
}

if (import.meta.main) {
  const env = (k: string, d: number): number => (process.env[k] !== undefined ? Number(process.env[k]) : d)
  const crs = env('BENCH_CRS', 200)
  const [qps, burst] = [env('BENCH_QPS', 20), env('BENCH_BURST', 30)]
  const chart = loadChart()
  const sandbox = await startSandbox({ podReadyDelayMs: 50, requestLogSize: 2_000_000, accountControllers: false, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  const user = clientFor(sandbox, 'bench-user/1', 'bench-user')
  const op = await startOperator({ ...runOptions(sandbox.kubeconfigPath), concurrency: String(env('BENCH_CONCURRENCY', 4)), kubeApiQps: String(qps), kubeApiBurst: String(burst), healthProbeBindAddress: '0' }, captureIO(), pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }))
  const names = Array.from({ length: crs }, (_, i) => `s${i}`)
  // Created by another field manager than the storm's changes, which own the Service's mark alone.
  const creator = clientFor(sandbox, 'bench-user/1', 'bench-creator')
  for (const name of names) await creator.apply({ ...MC, metadata: { name, namespace: 'default' }, spec: { size: env('BENCH_SIZE', 1), service: { annotations: { [MARK]: 'before' } } } }, { force: true })
  creator.close()
  await settled(sandbox, names, 'before', 600_000)
  const metrics = async () => (await fetch(`http://${op.endpoints.metricsAddress}/metrics`)).text()
  printFigures(await stormWindow({ sandbox, chart, user, names, qps, burst, metrics }, { windowS: env('BENCH_WINDOW_S', 10), retryAfterS: env('BENCH_RETRY_AFTER', 0), mark: 'after' }))
  await op.stop()
  user.close()
  await sandbox.close()
  process.exit(0)
}
