/**
 * `memcached-operator plan`: what moving every Memcached to a chart revision would do, CR by CR,
 * sorted into classes (fleet/plan.ts): no-op, in-place update, pod restart, prune, re-creation,
 * ownership conflict, invalid. It is `diff --all` (cli/diff.ts compareAll: the same render, dry
 * runs and predictions) with a target revision, the classes and their totals, and what a rollout
 * must still find when it carries the plan out. Against a live cluster, or offline (`--offline
 * FILE`): the Memcacheds of FILE (`kubectl get mc -A -o yaml`) converged in an in-process sandbox
 * on the revision they run now (`--current-chart`), then planned — a chart change judged in CI
 * with no cluster (plan-offline.ts). The plan itself is made by plan-make.ts.
 * Exit 0: no CR in a `--fail-on` class; 1: some; 2: the plan could not be made.
 */
import { parseClasses, PLAN_CLASSES, type PlanClass } from '../fleet/plan.ts'
import { RenderError } from '../render/errors.ts'
import { InputError, UsageError, type CliIO } from './io.ts'
import { makePlan, type Plan, type PlanOptions } from './plan-make.ts'
import { PLATFORMS } from './render.ts'

/** What fails a plan by default: a CR that would break, lose its pods at once, or lose objects. */
export const DEFAULT_FAIL_ON = 'invalid,conflict,recreate,prune'

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
