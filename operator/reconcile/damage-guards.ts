/**
 * The fleet's guards against damage, one of each per process and shared by every reconcile, as
 * the controller (controller.ts) builds them from its options: the damage budget (budget.ts:
 * deletes and pod restarts per window) and the pacer of workload re-creations (pacing.ts), which
 * grants a slot only when the budget has room for its delete; both report to the metrics as they
 * change, from zero.
 */
import type { Logger } from 'pino'
import { DamageBudget, DEFAULT_BUDGET, type BudgetLimits } from './budget.ts'
import type { ControllerMetrics } from './controller-metrics.ts'
import { RecreationPacer } from './pacing.ts'

/**
 * The default of `maxConcurrentRecreations` (controller.ts): one instance without
 * pods at a time, as a Deployment's default maxUnavailable takes a quarter of one instance's pods
 * (docs/operator.md, "Re-creating objects").
 */
export const MAX_CONCURRENT_RECREATIONS = 1
/** The default of `recreationTimeoutMs`: a Deployment's default progressDeadlineSeconds (600). */
export const RECREATION_TIMEOUT_MS = 600_000

/** What the guards are built from: the controller's options of the same names. */
export interface DamageGuardOptions {
  /** Deletes and pod restarts per window; default {@link DEFAULT_BUDGET}. */
  budget?: BudgetLimits
  /** Workloads re-created at a time; 0: no limit. Default {@link MAX_CONCURRENT_RECREATIONS}. */
  maxConcurrentRecreations?: number
  /** How long a re-creation holds its slot at most; default {@link RECREATION_TIMEOUT_MS}. */
  recreationTimeoutMs?: number
  metrics: Pick<ControllerMetrics, 'budget' | 'recreations'>
  log: Logger
}

/** The budget and the pacer; `onFree` is told the key of a CR whose re-creation may go on. */
export function damageGuards(opts: DamageGuardOptions, onFree: (key: string) => void): { budget: DamageBudget; pacer: RecreationPacer } {
  const limits = opts.budget ?? DEFAULT_BUDGET
  const budget = new DamageBudget({ ...limits, onChange: (used) => opts.metrics.budget?.(used) })
  opts.metrics.budget?.({ delete: 0, restart: 0 }, limits)
  const pacer = new RecreationPacer({
    budget,
    max: opts.maxConcurrentRecreations ?? MAX_CONCURRENT_RECREATIONS,
    timeoutMs: opts.recreationTimeoutMs ?? RECREATION_TIMEOUT_MS,
    onFree,
    onChange: (queued, inFlight) => opts.metrics.recreations?.(queued, inFlight),
    onTimeout: (slot) => opts.log.warn({ object: slot.what, timeoutMs: opts.recreationTimeoutMs ?? RECREATION_TIMEOUT_MS }, 're-created workload not ready in time: its re-creation slot is given up'),
  })
  opts.metrics.recreations?.(0, 0)
  return { budget, pacer }
}
