/**
 * The Memcached controller's metrics (controller.ts): what the controller and its reconciles
 * report — reconciles and their results, applies, prunes, failures, the kinds discovery found
 * served, the work queue and its workers, re-creations waiting and under way, the damage budget —
 * and their series in the operator's prom-client registry, named after controller-runtime's.
 */
import type { OperatorMetrics } from '../controller/metrics.ts'
import type { RuntimeMetrics, UnfinishedWorkSource } from '../controller/metrics-runtime.ts'
import type { QueueHooks } from '../controller/queue.ts'
import type { BudgetLimits } from './budget.ts'
import type { ReconcileMetrics } from './reconciler.ts'

/** The controller's name in metrics and logs. */
export const CONTROLLER_NAME = 'memcached'

/** Metrics of the controller, named after controller-runtime's. */
export interface ControllerMetrics extends ReconcileMetrics {
  reconciled(result: 'success' | 'error' | 'requeue' | 'requeue_after', seconds: number): void
  /** What discovery found of a declared kind (`apiVersion/Kind`). */
  kindServed?(kind: string, served: boolean): void
  /** Workload re-creations waiting for a slot and under way (pacing.ts). */
  recreations?(queued: number, inFlight: number): void
  /** Charges in the damage budget's window (budget.ts), and its limits (told once). */
  budget?(used: { delete: number; restart: number }, limits?: BudgetLimits): void
  queueHooks: QueueHooks
  /** The work queue, whose unfinished work is reported at each scrape. */
  watchQueue?(queue: UnfinishedWorkSource): void
  /** How many workers may reconcile at once. */
  maxConcurrent?(n: number): void
  /** A worker started (+1) or finished (-1) a reconcile. */
  activeWorkers?(delta: 1 | -1): void
}

/** The controller's metrics in the operator's prom-client registry. */
export function controllerMetrics(m: OperatorMetrics, runtime?: RuntimeMetrics): ControllerMetrics {
  m.initController(CONTROLLER_NAME)
  runtime?.activeWorkers.set({ controller: CONTROLLER_NAME }, 0)
  return {
    ...(runtime
      ? {
          watchQueue: (queue: UnfinishedWorkSource) => runtime.watchQueue(CONTROLLER_NAME, queue),
          maxConcurrent: (n: number) => runtime.maxConcurrentReconciles.set({ controller: CONTROLLER_NAME }, n),
          activeWorkers: (delta: 1 | -1) => runtime.activeWorkers.inc({ controller: CONTROLLER_NAME }, delta),
          unchanged: (kind: string) => runtime.unchangedApplies.inc({ kind }),
        }
      : {}),
    applied: (kind) => m.applies.inc({ kind }),
    skipped: (kind) => m.skippedApplies.inc({ kind }),
    pruned: (kind) => m.prunes.inc({ kind }),
    failed: (reason) => m.reconcileFailures.inc({ reason }),
    reconciled: (result, seconds) => m.observeReconcile(CONTROLLER_NAME, result, seconds),
    kindServed: (kind, served) => m.kindServed.set({ kind }, served ? 1 : 0),
    recreations: (queued, inFlight) => {
      m.recreations.set({ state: 'queued' }, queued)
      m.recreations.set({ state: 'in_flight' }, inFlight)
    },
    budget: (used, limits) => {
      m.budgetUsed.set({ budget: 'delete' }, used.delete)
      m.budgetUsed.set({ budget: 'restart' }, used.restart)
      if (limits) {
        m.budgetLimit.set({ budget: 'delete' }, limits.deletes)
        m.budgetLimit.set({ budget: 'restart' }, limits.restarts)
      }
    },
    budgetExhausted: (kind) => m.budgetExhausted.inc({ budget: kind }),
    drifted: (kind) => m.driftDetected.inc({ kind }),
    queueHooks: m.queueHooks(CONTROLLER_NAME),
  }
}
