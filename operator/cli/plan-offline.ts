/**
 * `plan --offline FILE`: the fleet of FILE (`kubectl get mc -A -o yaml`) in an in-process sandbox
 * cluster — its CRs created as they are (spec, labels, annotations; not their status), the
 * operator run on the chart they run now (`--current-chart`) until every CR has been reconciled
 * at its generation, the operator stopped — then planned like a live cluster. No cluster, no
 * network: CI can judge a chart change from a file. The sandbox runs without its simulated
 * kubelet and controllers: a plan reads the operator's objects, not pods.
 */
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import pino from 'pino'
import { memcachedCRD } from '../api/crd.ts'
import { API_VERSION, KIND, parseMemcacheds, type Memcached } from '../api/memcached.ts'
import { KubeClient, type KubeObject } from '../controller/client.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../render/chart.ts'
import { revisionName } from '../api/chart-revision.ts'
import { InputError, parseDuration, type CliIO } from './io.ts'
import { loadKubeConfig } from './kubeconfig.ts'
import { makePlan, type Plan, type PlanOptions } from './plan-make.ts'
import { startOperator } from './run.ts'

/** CRs created at once while the sandbox is loaded. */
const LOAD_CONCURRENCY = 16
/** How often convergence is looked at. */
const POLL_MS = 200

/** Loads FILE into a sandbox, converges it on the current chart, and plans the target against it. */
export async function planOffline(opts: PlanOptions, io: CliIO): Promise<Plan> {
  const file = resolve(io.cwd, opts.offline!)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    throw new InputError(`--offline ${opts.offline}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  const crs = parseMemcacheds(text, file)
  const current = loadChart(opts.currentChart ? resolve(io.cwd, opts.currentChart) : DEFAULT_CHART_DIR)
  const timeoutMs = parseDuration(opts.timeout ?? '10m')
  const started = performance.now()
  // The product's one door to the sandbox is the sandbox command's module, loaded only here and by
  // that command (docs/contributing.md, "The floors, and the sandbox beside them").
  const { startSandbox } = await import('./sandbox.ts')
  const sandbox = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(current) as unknown as KubeObject], requestLogSize: 0 })
  try {
    const user = new KubeClient(loadKubeConfig(sandbox.kubeconfigPath, io), { userAgent: 'memcached-operator-plan-offline', fieldManager: 'kubectl' })
    try {
      await load(user, crs)
    } finally {
      user.close()
    }
    const operator = await startOperator(
      { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '8', resyncPeriod: '10h', leaderElectionId: 'plan-offline', metricsBindAddress: '0', healthProbeBindAddress: '0', ...(opts.platform !== undefined && opts.platform !== 'auto' ? { platform: opts.platform } : {}) },
      io,
      pino({ level: 'silent' }),
      () => current,
    )
    try {
      await converged(sandbox.kubeconfigPath, io, crs.length, timeoutMs)
    } finally {
      await operator.stop()
    }
    io.stderr(`offline: ${crs.length} Memcacheds converged on ${revisionName(current)} in a sandbox in ${((performance.now() - started) / 1000).toFixed(1)} s; planning\n`)
    return await makePlan({ ...opts, platform: opts.platform ?? 'kubernetes' }, io, sandbox.kubeconfigPath, current)
  } finally {
    await sandbox.close()
  }
}

/** Creates the namespaces and the CRs, as they were written (not as the server filled them in). */
async function load(user: KubeClient, crs: Memcached[]): Promise<void> {
  const namespaces = new Set(crs.map((cr) => cr.metadata.namespace ?? 'default'))
  for (const name of namespaces) if (name !== 'default') await user.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(LOAD_CONCURRENCY, crs.length) }, async () => {
      while (next < crs.length) {
        const cr = crs[next++]!
        const { labels, annotations } = cr.metadata as { labels?: Record<string, string>; annotations?: Record<string, string> }
        // A pin names a revision the sandbox does not hold: the CR runs the current chart.
        const { chartRevision: _pin, ...spec } = (cr.spec ?? {}) as Record<string, unknown>
        await user.create({ apiVersion: API_VERSION, kind: KIND, metadata: { name: cr.metadata.name, namespace: cr.metadata.namespace ?? 'default', ...(labels ? { labels } : {}), ...(annotations ? { annotations: withoutServerAnnotations(annotations) } : {}) }, spec })
      }
    }),
  )
}

/** kubectl's own annotation holds the whole object as last applied: not part of the fleet's state. */
function withoutServerAnnotations(annotations: Record<string, string>): Record<string, string> {
  const { 'kubectl.kubernetes.io/last-applied-configuration': _last, ...rest } = annotations
  return rest
}

/** Waits until every CR's status describes its generation (the operator reconciled it). */
async function converged(kubeconfig: string, io: CliIO, count: number, timeoutMs: number): Promise<void> {
  const client = new KubeClient(loadKubeConfig(kubeconfig, io), { userAgent: 'memcached-operator-plan-offline' })
  const deadline = Date.now() + timeoutMs
  try {
    for (;;) {
      const items = (await client.list<KubeObject & Memcached>({ apiVersion: API_VERSION, kind: KIND })).items
      const pending = items.filter((cr) => cr.status?.observedGeneration !== cr.metadata.generation)
      if (items.length === count && pending.length === 0) return
      if (Date.now() > deadline) throw new InputError(`--offline: ${pending.length} of ${count} Memcacheds not reconciled within --timeout (e.g. ${pending.slice(0, 3).map((cr) => `${cr.metadata.namespace}/${cr.metadata.name}`).join(', ')})`)
      await new Promise((r) => setTimeout(r, POLL_MS))
    }
  } finally {
    client.close()
  }
}
