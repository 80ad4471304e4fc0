/**
 * The controller-runtime and client-go metrics that alerts on a stuck or leaderless operator use,
 * beside those of metrics.ts and in the same registry:
 *
 * - `workqueue_unfinished_work_seconds{name}` and `workqueue_longest_running_processor_seconds{name}`
 *   (client-go `util/workqueue/metrics.go`): read from the queue when scraped;
 * - `controller_runtime_active_workers{controller}` and
 *   `controller_runtime_max_concurrent_reconciles{controller}` (controller-runtime
 *   `pkg/internal/controller/metrics`): workers in a reconcile now, and how many may be;
 * - `leader_election_master_status{name}` (client-go `tools/leaderelection/metrics.go`): 1 while
 *   this process holds the Lease `name`, 0 otherwise;
 * - `memcached_operator_unchanged_applies_total{kind}`: applies the server answered with the object
 *   as it was (a mutating webhook rewrote the field back), which `memcached_operator_applies_total`
 *   does not count.
 */
import { Counter, Gauge, type Registry } from 'prom-client'

/** What a work queue tells about the keys it has handed out and not yet got back. */
export interface UnfinishedWorkSource {
  unfinishedWork(): { seconds: number; longestSeconds: number }
}

/** The gauges of this module, registered in one registry. */
export interface RuntimeMetrics {
  /** `controller_runtime_active_workers{controller}` */
  readonly activeWorkers: Gauge<'controller'>
  /** `controller_runtime_max_concurrent_reconciles{controller}` */
  readonly maxConcurrentReconciles: Gauge<'controller'>
  /** `leader_election_master_status{name}` */
  readonly leaderElectionMasterStatus: Gauge<'name'>
  /** `memcached_operator_unchanged_applies_total{kind}` */
  readonly unchangedApplies: Counter<'kind'>
  /** Reports a queue's unfinished work under `name` at every scrape. */
  watchQueue(name: string, queue: UnfinishedWorkSource): void
  /** Sets `leader_election_master_status{name}`. */
  setLeading(name: string, leading: boolean): void
}

/** Registers the gauges in `registry` (once per registry). */
export function createRuntimeMetrics(registry: Registry): RuntimeMetrics {
  const registers = [registry]
  const queues = new Map<string, UnfinishedWorkSource>()
  const unfinished = new Gauge({
    name: 'workqueue_unfinished_work_seconds',
    help: 'How many seconds of work has done that is in progress and hasn\'t been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.',
    labelNames: ['name'] as const,
    registers,
    collect() {
      for (const [name, q] of queues) this.set({ name }, q.unfinishedWork().seconds)
    },
  })
  const longest = new Gauge({
    name: 'workqueue_longest_running_processor_seconds',
    help: 'How many seconds has the longest running processor for workqueue been running.',
    labelNames: ['name'] as const,
    registers,
    collect() {
      for (const [name, q] of queues) this.set({ name }, q.unfinishedWork().longestSeconds)
    },
  })
  const activeWorkers = new Gauge({ name: 'controller_runtime_active_workers', help: 'Number of currently used workers per controller', labelNames: ['controller'] as const, registers })
  const maxConcurrentReconciles = new Gauge({ name: 'controller_runtime_max_concurrent_reconciles', help: 'Maximum number of concurrent reconciles per controller', labelNames: ['controller'] as const, registers })
  const leaderElectionMasterStatus = new Gauge({ name: 'leader_election_master_status', help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. \'name\' is the string used to identify the lease. Please make sure to group by name.', labelNames: ['name'] as const, registers })
  const unchangedApplies = new Counter({ name: 'memcached_operator_unchanged_applies_total', help: 'Server-side applies the server answered with the object unchanged, by kind', labelNames: ['kind'] as const, registers })
  return {
    unchangedApplies,
    activeWorkers,
    maxConcurrentReconciles,
    leaderElectionMasterStatus,
    watchQueue(name, queue) {
      queues.set(name, queue)
      unfinished.set({ name }, 0)
      longest.set({ name }, 0)
    },
    setLeading(name, leading) {
      leaderElectionMasterStatus.set({ name }, leading ? 1 : 0)
    },
  }
}
