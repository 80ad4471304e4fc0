/**
 * `memcached-operator plan`: what moving every Memcached to a chart revision would do, CR by CR,
 * sorted into classes (fleet/plan.ts): no-op, in-place update, pod restart, prune, re-creation,
 * ownership conflict, invalid. It is `diff --all` (cli/diff.ts compareAll: the same render, dry
 * runs and predictions) with a target revision, the classes and their totals, and what a rollout
 * must still find when it carries the plan out. Against a live cluster, or offline (`--offline
 * FILE`): the Memcacheds of FILE (`kubectl get mc -A -o yaml`) converged in an in-process sandbox
 * on the revision they run now (`--current-chart`), then planned — a chart change judged in CI
 * with no cluster (plan-offline.ts).
 * Exit 0: no CR in a `--fail-on` class; 1: some; 2: the plan could not be made.
 */
import { resolve } from 'node:path'
import { API_VERSION, KIND, type Memcached } from '../api/memcached.ts'
import { ApiError, isNotFound, KubeClient, type KubeObject } from '../controller/client.ts'
import { detectPlatform } from '../controller/platform.ts'
import { classify, parseClasses, PLAN_CLASSES, totals, type PlanClass, type PlannedCr } from '../fleet/plan.ts'
import { DEFAULT_CHART_DIR, loadChart, type Chart } from '../render/chart.ts'
import { kindKey, type ChartKind } from '../render/kinds.ts'
import { RenderError } from '../render/errors.ts'
import { chartOfRevision, REVISION_API_VERSION, REVISION_KIND, revisionName, type ChartRevisionObject } from '../render/revision.ts'
import { FIELD_MANAGER } from '../reconcile/diff.ts'
import { compareAll, liveByList } from './diff.ts'
import { InputError, packageVersion, UsageError, type CliIO } from './io.ts'
import { identityOf, loadKubeConfig } from './kubeconfig.ts'
import { PLATFORMS } from './render.ts'

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

/** What fails a plan by default: a CR that would break, lose its pods at once, or lose objects. */
export const DEFAULT_FAIL_ON = 'invalid,conflict,recreate,prune'

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

/** The plan as text: one line per CR that changes, then the totals. */
export function planText(plan: Plan): string {
  const n = plan.memcacheds.length
  const lines = [`Plan: ${n} Memcached${n === 1 ? '' : 's'} to ${plan.target.revision} (${plan.target.source})`]
  const width = Math.max(0, ...plan.memcacheds.map((m) => m.memcached.length))
  for (const m of plan.memcacheds) {
    if (m.class === 'none') continue
    const objects = m.objects.filter((o) => o.action !== 'none' && o.action !== 'omit').map((o) => `${o.kind} ${o.name}: ${o.action}${o.podsRestart ? ' (pods restart)' : ''}${o.reason ? ` (${o.reason})` : ''}`)
    const why = m.error ?? objects.join('; ')
    lines.push(`  ${m.memcached.padEnd(width)}  ${m.class.padEnd(8)}  ${why}${m.pinned !== undefined ? ` [pinned to ${m.pinned}]` : ''}`)
  }
  lines.push(`Totals: ${PLAN_CLASSES.map((c) => `${c} ${plan.totals[c]}`).join(', ')}`)
  return `${lines.join('\n')}\n`
}

/** Runs `plan`; returns 0, 1 or 2 (see the file's comment). */
export async function runPlan(opts: PlanOptions, io: CliIO): Promise<number> {
  if ((opts.chart === undefined) === (opts.revision === undefined)) throw new UsageError('give the target: --chart DIR or --revision NAME (one of them)')
  if (opts.offline !== undefined && opts.revision !== undefined) throw new UsageError('--offline plans a chart directory: give --chart DIR, not --revision')
  if (opts.offline === undefined && (opts.currentChart !== undefined || opts.timeout !== undefined)) throw new UsageError('--current-chart and --timeout go with --offline')
  const output = opts.output ?? 'text'
  if (output !== 'text' && output !== 'json') throw new UsageError(`--output must be text or json, not ${JSON.stringify(output)}`)
  const platformFlag = opts.platform ?? 'auto'
  if (platformFlag !== 'auto' && !(PLATFORMS as readonly string[]).includes(platformFlag)) throw new UsageError(`--platform must be auto, ${PLATFORMS.join(' or ')}, not ${JSON.stringify(opts.platform)}`)
  let failOn: PlanClass[]
  try {
    failOn = parseClasses(opts.failOn ?? DEFAULT_FAIL_ON)
  } catch (err) {
    throw new UsageError(`--fail-on: ${(err as Error).message}`)
  }
  let plan: Plan
  try {
    if (opts.offline !== undefined) {
      const { planOffline } = await import('./plan-offline.ts')
      plan = await planOffline(opts, io)
    } else plan = await makePlan(opts, io, opts.kubeconfig)
  } catch (err) {
    if (err instanceof UsageError) throw err
    io.stderr(`error: ${err instanceof RenderError || err instanceof InputError ? err.message : err instanceof Error ? err.message : String(err)}\n`)
    return 2
  }
  for (const m of plan.memcacheds) if (m.class === 'error') io.stderr(`error: Memcached ${m.memcached}: ${m.error}\n`)
  io.stdout(output === 'json' ? `${JSON.stringify(plan, null, 2)}\n` : planText(plan))
  if (plan.totals.error > 0) return 2
  return failOn.some((c) => plan.totals[c] > 0) ? 1 : 0
}
