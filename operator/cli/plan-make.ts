/**
 * Making a plan (`memcached-operator plan`, plan.ts): every Memcached the flags select, compared
 * with the target revision by `diff --all` (cli/diff.ts compareAll) and sorted into classes
 * (fleet/plan.ts), against the cluster of a kubeconfig — a live one, or the in-process sandbox
 * of `plan --offline` (plan-offline.ts).
 */
import { resolve } from 'node:path'
import { API_VERSION, KIND, type Memcached } from '../api/memcached.ts'
import { ApiError, isNotFound, KubeClient, type KubeObject } from '../controller/client.ts'
import { detectPlatform } from '../controller/platform.ts'
import { classify, totals, type PlanClass, type PlannedCr } from '../fleet/plan.ts'
import { DEFAULT_CHART_DIR, loadChart, type Chart } from '../render/chart.ts'
import { kindKey, type ChartKind } from '../render/kinds.ts'
import { chartOfRevision, REVISION_API_VERSION, REVISION_KIND, revisionName, type ChartRevisionObject } from '../api/chart-revision.ts'
import { FIELD_MANAGER } from '../reconcile/diff.ts'
import { compareAll, liveByList } from '../fleet/compare.ts'
import { InputError, packageVersion, type CliIO } from './io.ts'
import { identityOf, loadKubeConfig } from './kubeconfig.ts'

export interface PlanOptions {
  /** The target: a chart directory… */
  chart?: string
  /** …or a ChartRevision of the cluster. */
  revision?: string
  kubeconfig?: string
  context?: string
  namespace?: string
  selector?: string
  /** `text` (default) or `json`. */
  output?: string
  /** Comma-separated classes that make the exit code 1 (default {@link DEFAULT_FAIL_ON}). */
  failOn?: string
  platform?: string
  /** A file of Memcacheds (`kubectl get mc -A -o yaml`) to plan in an in-process sandbox instead of a cluster. */
  offline?: string
  /** Offline: the chart the Memcacheds run now (default: the bundled one). */
  currentChart?: string
  /** Offline: how long their convergence may take (Go duration, default 10m). */
  timeout?: string
}

/** The plan as `-o json` prints it. */
export interface Plan {
  target: { revision: string; digest: string; source: string }
  totals: Record<PlanClass, number>
  memcacheds: PlannedCr[]
}

/** The target chart: a directory, or a ChartRevision read from the cluster. */
async function targetOf(opts: PlanOptions, io: CliIO, client: KubeClient): Promise<{ chart: Chart; source: string }> {
  if (opts.chart !== undefined) {
    const dir = resolve(io.cwd, opts.chart)
    return { chart: loadChart(dir), source: dir }
  }
  const name = opts.revision!
  let object: KubeObject
  try {
    object = await client.get({ apiVersion: REVISION_API_VERSION, kind: REVISION_KIND, name })
  } catch (err) {
    if (isNotFound(err)) throw new InputError(`--revision: ChartRevision ${JSON.stringify(name)} does not exist (kubectl get chartrevisions)`)
    throw err
  }
  return { chart: chartOfRevision(object as unknown as ChartRevisionObject), source: `ChartRevision ${name}` }
}

/** The kinds of `target` and of `watched` (the operator's own chart), each once. */
function kindsOf(target: Chart, watched: Chart): ChartKind[] {
  const seen = new Set(target.kinds.map(kindKey))
  return [...target.kinds, ...watched.kinds.filter((k) => !seen.has(kindKey(k)))]
}

/**
 * Makes the plan of every Memcached the flags select, against the cluster of `kubeconfig`.
 * `watched` is the operator's own chart (default: the bundled one): its kinds are the ones the
 * operator prunes over, so that an object of a kind the target no longer declares shows as pruned.
 */
export async function makePlan(opts: PlanOptions, io: CliIO, kubeconfig: string | undefined, watched: Chart = loadChart(DEFAULT_CHART_DIR)): Promise<Plan> {
  const kc = loadKubeConfig(kubeconfig, io, opts.context)
  const describe = (err: unknown): string =>
    err instanceof ApiError && (err.status === 401 || err.status === 403) && err.details?.kind === undefined ? `the server refused the credentials of ${identityOf(kc)}: ${err.status} ${err.message || err.reason}` : err instanceof Error ? err.message : String(err)
  const client = new KubeClient(kc, { userAgent: `memcached-operator-plan/${packageVersion()}`, fieldManager: FIELD_MANAGER })
  try {
    const { chart, source } = await targetOf(opts, io, client)
    client.learnKinds(chart.kinds)
    const platformFlag = opts.platform ?? 'auto'
    const platform = platformFlag === 'auto' ? await detectPlatform(client) : platformFlag
    const crs = (await client.list<KubeObject & Memcached>({ apiVersion: API_VERSION, kind: KIND }, { ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}), ...(opts.selector ? { labelSelector: opts.selector } : {}) })).items
    const kinds = kindsOf(chart, watched)
    client.learnKinds(kinds)
    const live = await liveByList(client, crs, kinds, opts.namespace)
    // The revision moves under the CR: its pin is not a value to render with.
    const results = await compareAll({ client, chartOf: () => chart, live, overrides: [], platform, fromContext: undefined, skipEqual: true, summaryOnly: true, pruneKinds: kinds }, crs, describe)
    const memcacheds = results.map((r, i): PlannedCr => {
      const cr = crs[i]!
      const pinned = (cr.spec as { chartRevision?: unknown } | undefined)?.chartRevision
      const from = cr.status?.chartRevision
      return { ...r.summary, class: classify(r.summary), ...(typeof from === 'string' ? { from } : {}), ...(typeof pinned === 'string' ? { pinned } : {}) }
    })
    return { target: { revision: revisionName(chart), digest: `sha256:${chart.digest}`, source }, totals: totals(memcacheds), memcacheds }
  } finally {
    client.close()
  }
}
