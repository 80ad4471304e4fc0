/**
 * `npm run bench:storm`: a 429 storm. The operator (`run`, in-process, with its client-side rate
 * limit) settles N Memcached CRs (default 200) in the sandbox; then every one is changed while the
 * sandbox refuses each write of the operator 429 for a window (default 10 s): the applies of every
 * chart kind, status writes and events. Prints the requests per second the operator sent in the
 * window, by code, beside its configured --kube-api-qps/--kube-api-burst, the rejections per CR,
 * the status writes and events it attempted, and how long after the window every CR carried the
 * change and was Ready again. Prints figures; asserts nothing.
 *
 * BENCH_CRS (200), BENCH_WINDOW_S (10), BENCH_QPS (20), BENCH_BURST (30), BENCH_RETRY_AFTER
 * (the 429s' Retry-After seconds, default 0: a server that sheds without asking for a wait, the
 * case the rate limit alone bounds; API Priority and Fairness sends 1), BENCH_CONCURRENCY (4),
 * BENCH_LOG_LEVEL (the operator's log level, default silent).
 */
import pino from 'pino'
import { memcachedCRD } from '../../operator/api/crd.ts'
import { startOperator } from '../../operator/cli/run.ts'
import type { KubeObject } from '../../operator/controller/client.ts'
import { loadChart } from '../../operator/render/chart.ts'
import { startSandbox } from '../../operator/sandbox/index.ts'
import { captureIO } from '../support/io.ts'
import { clientFor, eventually, runOptions } from '../support/operator.ts'

/** Runs one storm and returns its figures. */
export async function stormPhase(opts: { crs: number; windowS: number; qps: number; burst: number; retryAfterS: number; concurrency: number }): Promise<Record<string, number | string>> {
  const chart = loadChart()
  const sandbox = await startSandbox({ podReadyDelayMs: 50, requestLogSize: 2_000_000, accountControllers: false, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  const user = clientFor(sandbox, 'bench-user/1', 'bench-user')
  const op = await startOperator({ ...runOptions(sandbox.kubeconfigPath), concurrency: String(opts.concurrency), kubeApiQps: String(opts.qps), kubeApiBurst: String(opts.burst), healthProbeBindAddress: '0' }, captureIO(), pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }))
  const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
  const cr = (i: number, memoryMB: number) => ({ ...MC, metadata: { name: `s${i}`, namespace: 'default' }, spec: { size: 1, memoryMB } })
  const settled = async (memoryMB: number, timeoutMs: number): Promise<void> => {
    await eventually(`${opts.crs} CRs at ${memoryMB} MB`, async () => {
      const list = await user.list<KubeObject>({ ...MC }, { namespace: 'default' })
      const done = list.items.filter((o) => {
        const st = o.status as { observedGeneration?: number; conditions?: { type: string; status: string }[] } | undefined
        return (o.spec as { memoryMB?: number }).memoryMB === memoryMB && st?.observedGeneration === o.metadata.generation && st?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
      })
      return done.length === opts.crs ? true : undefined
    }, timeoutMs)
  }
  for (let i = 0; i < opts.crs; i++) await user.apply(cr(i, 64), { force: true })
  await settled(64, 600_000)
  const ua = /^memcached-operator\//
  const kinds = [...new Set(chart.kinds.map((k) => (k.apiVersion.includes('/') ? `${k.resource}.${k.apiVersion.split('/')[0]}` : k.resource)))]
  sandbox.faults.set({ throttleRate: 1, retryAfterS: opts.retryAfterS, verbs: ['create', 'update', 'patch', 'delete'], resources: [...kinds, 'events', 'events.events.k8s.io', 'memcacheds/status'] })
  const from = sandbox.requests.log().length
  const t0 = performance.now()
  for (let i = 0; i < opts.crs; i++) await user.apply(cr(i, 65), { force: true })
  await new Promise((r) => setTimeout(r, opts.windowS * 1000 - (performance.now() - t0)))
  const window = sandbox.requests.log().slice(from).filter((r) => ua.test(r.userAgent ?? ''))
  const secs = (performance.now() - t0) / 1000
  sandbox.faults.set({})
  const t1 = performance.now()
  await settled(65, 600_000)
  const recovered = (performance.now() - t1) / 1000
  const byCode: Record<string, number> = {}
  for (const r of window) byCode[r.code] = (byCode[r.code] ?? 0) + 1
  const rejected = byCode['429'] ?? 0
  const statusWrites = window.filter((r) => r.resource === 'memcacheds' && r.subresource === 'status').length
  const events = window.filter((r) => r.resource === 'events').length
  const metrics = await (await fetch(`http://${op.endpoints.metricsAddress}/metrics`)).text()
  const counted429 = [...metrics.matchAll(/^rest_client_requests_total\{code="429"[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0)
  await op.stop()
  user.close()
  await sandbox.close()
  return {
    'CRs': opts.crs,
    '--kube-api-qps / --kube-api-burst': `${opts.qps} / ${opts.burst}`,
    'Retry-After (s)': opts.retryAfterS,
    'window (s)': Number(secs.toFixed(1)),
    'requests sent in the window': window.length,
    'requests per second': Number((window.length / secs).toFixed(1)),
    'bound: qps + burst / window': opts.qps > 0 ? Number((opts.qps + opts.burst / secs).toFixed(1)) : 'none (no client-side limit)',
    'of which 429': rejected,
    'rejected per CR per second': Number((rejected / opts.crs / secs).toFixed(3)),
    'status writes attempted': statusWrites,
    'events attempted': events,
    'rest_client_requests_total{code="429"} (whole run)': counted429,
    'seconds after the window until every CR carried the change, Ready': Number(recovered.toFixed(1)),
  }
}

if (import.meta.main) {
  const env = (k: string, d: number): number => (process.env[k] !== undefined ? Number(process.env[k]) : d)
  const figures = await stormPhase({ crs: env('BENCH_CRS', 200), windowS: env('BENCH_WINDOW_S', 10), qps: env('BENCH_QPS', 20), burst: env('BENCH_BURST', 30), retryAfterS: env('BENCH_RETRY_AFTER', 0), concurrency: env('BENCH_CONCURRENCY', 4) })
  for (const [k, v] of Object.entries(figures)) console.log(`${k.padEnd(60)} ${v}`)
  process.exit(0)
}
