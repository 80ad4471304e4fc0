/**
 * The operator's Prometheus metrics, under controller-runtime's names so that existing
 * dashboards and alerts for Go operators work unchanged, plus the operator's own counters of
 * what it wrote and what it avoided writing.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { QueueHooks } from './queue.ts'

/** How a reconcile ended (controller-runtime's `result` label). */
export type ReconcileResult = 'success' | 'error' | 'requeue' | 'requeue_after'

const RESULTS: readonly ReconcileResult[] = ['success', 'error', 'requeue', 'requeue_after']

/** controller-runtime's `controller_runtime_reconcile_time_seconds` buckets. */
const RECONCILE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60]

/** client-go's workqueue duration buckets: 10 ns to 1,000 s by powers of ten. */
const QUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => Number((1e-8 * 10 ** i).toPrecision(1)))

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Register Node's process metrics (`process_cpu_seconds_total`, heap, event loop lag…); default true. */
  defaultMetrics?: boolean
}

/** The operator's metrics and the registry that serves them. */
export interface OperatorMetrics {
  /** Serve with `registry.metrics()` and `registry.contentType`. */
  readonly registry: Registry
  /** `controller_runtime_reconcile_total{controller,result}` */
  readonly reconcileTotal: Counter<'controller' | 'result'>
  /** `controller_runtime_reconcile_errors_total{controller}` */
  readonly reconcileErrors: Counter<'controller'>
  /** `controller_runtime_reconcile_time_seconds{controller}` */
  readonly reconcileTime: Histogram<'controller'>
  /** `workqueue_depth{name}` */
  readonly workqueueDepth: Gauge<'name'>
  /** `workqueue_adds_total{name}` */
  readonly workqueueAdds: Counter<'name'>
  /** `workqueue_retries_total{name}` */
  readonly workqueueRetries: Counter<'name'>
  /** `workqueue_queue_duration_seconds{name}` */
  readonly workqueueQueueDuration: Histogram<'name'>
  /** `workqueue_work_duration_seconds{name}` */
  readonly workqueueWorkDuration: Histogram<'name'>
  /** `memcached_operator_applies_total{kind}`: server-side applies that created or changed an object. */
  readonly applies: Counter<'kind'>
  /** `memcached_operator_prunes_total{kind}`: objects deleted because no longer rendered. */
  readonly prunes: Counter<'kind'>
  /** `memcached_operator_skipped_applies_total{kind}`: applies not sent because nothing differed. */
  readonly skippedApplies: Counter<'kind'>
  /** `memcached_operator_reconcile_failures_total{reason}`: failed reconciles by condition reason. */
  readonly reconcileFailures: Counter<'reason'>
  /** `memcached_operator_kind_served{kind}`: 1 when the cluster serves a kind the chart declares (`apiVersion/Kind`), 0 when not. */
  readonly kindServed: Gauge<'kind'>
  /** `memcached_operator_recreations{state}`: workload re-creations `queued` for a slot and `in_flight` (deleted, replacement not ready yet). */
  readonly recreations: Gauge<'state'>
  /** `memcached_operator_damage_budget_used{budget}`: deletes and pod restarts charged in the current window (budget `delete`, `restart`). */
  readonly budgetUsed: Gauge<'budget'>
  /** `memcached_operator_damage_budget_limit{budget}`: the limit of each budget per window (0: none). */
  readonly budgetLimit: Gauge<'budget'>
  /** `memcached_operator_damage_budget_exhausted_total{budget}`: reconciles made to wait because their change would go over a budget. */
  readonly budgetExhausted: Counter<'budget'>
  /** `memcached_operator_drift_detected_total{kind}`: objects found drifted and left as they are (drift mode `warn`). */
  readonly driftDetected: Counter<'kind'>
  /**
   * `rest_client_requests_total{code,method,host}`: client-go's count of requests sent, one per
   * attempt (retries included), by status code (`<error>` when no answer came), as
   * controller-runtime registers it (pkg/metrics/client_go_adapter.go); a KubeClient's
   * `onRequestResult`.
   */
  readonly restClientRequests: Counter<'code' | 'method' | 'host'>
  /** Feeds {@link OperatorMetrics.restClientRequests}: pass as KubeClient's `onRequestResult`. */
  requestResult(r: { code: string; method: string; host: string }): void
  /** Sets every `result` of a controller to 0, so rates exist before the first reconcile (as controller-runtime does). */
  initController(controller: string): void
  /** Records one reconcile: its result, its duration, and an error count for `error`. */
  observeReconcile(controller: string, result: ReconcileResult, seconds: number): void
  /** Hooks that feed a work queue's metrics (`new WorkQueue({ name, hooks: metrics.queueHooks(name) })`). */
  queueHooks(name: string): QueueHooks
}

/** Creates a fresh registry with the operator's metrics (one per process; tests make their own). */
export function createMetrics(opts: MetricsOptions = {}): OperatorMetrics {
  const registry = new Registry()
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry })
  const registers = [registry]
  const reconcileTotal = new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'] as const, registers })
  const reconcileErrors = new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: ['controller'] as const, registers })
  const reconcileTime = new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help: 'Length of time per reconciliation per controller', labelNames: ['controller'] as const, buckets: RECONCILE_BUCKETS, registers })
  const workqueueDepth = new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'] as const, registers })
  const workqueueAdds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'] as const, registers })
  const workqueueRetries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name'] as const, registers })
  const workqueueQueueDuration = new Histogram({ name: 'workqueue_queue_duration_seconds', help: 'How long in seconds an item stays in workqueue before being requested', labelNames: ['name'] as const, buckets: QUEUE_BUCKETS, registers })
  const workqueueWorkDuration = new Histogram({ name: 'workqueue_work_duration_seconds', help: 'How long in seconds processing an item from workqueue takes', labelNames: ['name'] as const, buckets: QUEUE_BUCKETS, registers })
  const applies = new Counter({ name: 'memcached_operator_applies_total', help: 'Server-side applies that created or changed an object, by kind', labelNames: ['kind'] as const, registers })
  const prunes = new Counter({ name: 'memcached_operator_prunes_total', help: 'Objects deleted because their CR no longer renders them, by kind', labelNames: ['kind'] as const, registers })
  const skippedApplies = new Counter({ name: 'memcached_operator_skipped_applies_total', help: 'Applies not sent because the live object already matched, by kind', labelNames: ['kind'] as const, registers })
  const reconcileFailures = new Counter({ name: 'memcached_operator_reconcile_failures_total', help: 'Failed reconciles, by condition reason', labelNames: ['reason'] as const, registers })
  const kindServed = new Gauge({ name: 'memcached_operator_kind_served', help: 'Whether the cluster serves a kind the chart declares (1) or not (0), by apiVersion/Kind', labelNames: ['kind'] as const, registers })
  const recreations = new Gauge({ name: 'memcached_operator_recreations', help: 'Workload re-creations waiting for a slot (queued) and under way (in_flight): deleted, replacement not ready yet', labelNames: ['state'] as const, registers })
  const budgetUsed = new Gauge({ name: 'memcached_operator_damage_budget_used', help: 'Deletes (delete) and pod restarts (restart) charged to the fleet\'s damage budget in the current window', labelNames: ['budget'] as const, registers })
  const budgetLimit = new Gauge({ name: 'memcached_operator_damage_budget_limit', help: 'The damage budget per window (0: no limit), by budget', labelNames: ['budget'] as const, registers })
  const budgetExhausted = new Counter({ name: 'memcached_operator_damage_budget_exhausted_total', help: 'Reconciles made to wait because their change would go over a damage budget, by budget', labelNames: ['budget'] as const, registers })
  const driftDetected = new Counter({ name: 'memcached_operator_drift_detected_total', help: 'Objects found changed by another manager and left as they are (drift mode warn), by kind', labelNames: ['kind'] as const, registers })
  const restClientRequests = new Counter({ name: 'rest_client_requests_total', help: 'Number of HTTP requests, partitioned by status code, method, and host.', labelNames: ['code', 'method', 'host'] as const, registers })
  return {
    registry,
    restClientRequests,
    requestResult(r) {
      restClientRequests.inc({ code: r.code, method: r.method, host: r.host })
    },
    reconcileTotal,
    reconcileErrors,
    reconcileTime,
    workqueueDepth,
    workqueueAdds,
    workqueueRetries,
    workqueueQueueDuration,
    workqueueWorkDuration,
    applies,
    prunes,
    skippedApplies,
    reconcileFailures,
    kindServed,
    recreations,
    budgetUsed,
    budgetLimit,
    budgetExhausted,
    driftDetected,
    initController(controller) {
      for (const result of RESULTS) reconcileTotal.inc({ controller, result }, 0)
      reconcileErrors.inc({ controller }, 0)
    },
    observeReconcile(controller, result, seconds) {
      reconcileTotal.inc({ controller, result })
      if (result === 'error') reconcileErrors.inc({ controller })
      reconcileTime.observe({ controller }, seconds)
    },
    queueHooks(name) {
      workqueueDepth.set({ name }, 0)
      workqueueAdds.inc({ name }, 0)
      workqueueRetries.inc({ name }, 0)
      return {
        add: () => workqueueAdds.inc({ name }),
        depth: (n) => workqueueDepth.set({ name }, n),
        retry: () => workqueueRetries.inc({ name }),
        queueLatency: (s) => workqueueQueueDuration.observe({ name }, s),
        workDuration: (s) => workqueueWorkDuration.observe({ name }, s),
      }
    },
  }
}
