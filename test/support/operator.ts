/** An operator against a sandbox, in-process, for integration tests. */
import { KubeConfig } from '@kubernetes/client-node'
import { Writable } from 'node:stream'
import pino from 'pino'
import type { Test } from 'tap'
import type { RunOptions } from '../../operator/cli/run.ts'
import { memcachedCRD } from '../../operator/api/crd.ts'
import { isNotFound, KubeClient, type KubeObject } from '../../operator/controller/client.ts'
import { loadChart, type Chart } from '../../operator/render/chart.ts'
import { createLogger, type Level } from '../../operator/controller/log.ts'
import { MemcachedController } from '../../operator/reconcile/controller.ts'
import type { ControllerMetrics } from '../../operator/reconcile/controller-metrics.ts'
import { EventAggregator } from '../../operator/reconcile/events.ts'
import type { BudgetLimits } from '../../operator/reconcile/budget.ts'
import { ApiEventRecorder } from '../../operator/reconcile/recorder.ts'
import type { PodDialer } from '../../operator/reconcile/reload.ts'
import { startSandbox, type Sandbox, type SandboxOptions } from '../../operator/sandbox/index.ts'

/** Counts what the controller reports, by name. */
export class CountingMetrics implements ControllerMetrics {
  counts: Record<string, number> = {}
  #inc(name: string): void {
    this.counts[name] = (this.counts[name] ?? 0) + 1
  }
  applied(kind: string): void {
    this.#inc(`applied:${kind}`)
  }
  unchanged(kind: string): void {
    this.#inc(`unchanged:${kind}`)
  }
  skipped(kind: string): void {
    this.#inc(`skipped:${kind}`)
  }
  pruned(kind: string): void {
    this.#inc(`pruned:${kind}`)
  }
  failed(reason: string): void {
    this.#inc(`failed:${reason}`)
  }
  reconciled(result: string): void {
    this.#inc(`reconciled:${result}`)
  }
  /** The last of each kind, `served:<apiVersion/Kind>` 1 or 0. */
  kindServed(kind: string, served: boolean): void {
    this.counts[`served:${kind}`] = served ? 1 : 0
  }
  /** Every (queued, in-flight) pair of re-creations reported, in order. */
  recreationCounts: [number, number][] = []
  recreations(queued: number, inFlight: number): void {
    this.recreationCounts.push([queued, inFlight])
  }
  /** The damage budget's charges in the window, as last reported. */
  budgetUsed = { delete: 0, restart: 0 }
  budget(used: { delete: number; restart: number }): void {
    this.budgetUsed = { ...used }
  }
  budgetExhausted(kind: string): void {
    this.#inc(`budgetExhausted:${kind}`)
  }
  drifted(kind: string): void {
    this.#inc(`drifted:${kind}`)
  }
  queueHooks = {}
}

export interface Bed {
  sandbox: Sandbox
  /** The operator's client (user agent memcached-operator/test). */
  operatorClient: KubeClient
  /** A user's client (user agent test-user/1, field manager test-user), for the test's own requests. */
  client: KubeClient
  controller: MemcachedController
  metrics: CountingMetrics
  stop(): Promise<void>
}

/** A client of the sandbox with the operator's identity. */
export function clientFor(sandbox: Sandbox, userAgent = 'memcached-operator/test', fieldManager = 'memcached-operator'): KubeClient {
  const kc = new KubeConfig()
  kc.loadFromFile(sandbox.kubeconfigPath)
  return new KubeClient(kc, { userAgent, fieldManager })
}

/** An operator (controller and its client) against a running sandbox. */
export async function startOperatorOn(sandbox: Sandbox, opts: { chart?: Chart; concurrency?: number; resyncPeriodMs?: number; eventSuppressMs?: number; discoveryPeriodMs?: number; maxConcurrentRecreations?: number; sustainedFailureMs?: number; podDialer?: PodDialer; reloadRetryMs?: number; reloadSettleMs?: number; budget?: BudgetLimits; maxPruneFraction?: number; namespaces?: string[] } = {}): Promise<{ controller: MemcachedController; client: KubeClient; metrics: CountingMetrics; stop(): Promise<void> }> {
  const chart = opts.chart ?? loadChart()
  const client = clientFor(sandbox)
  const metrics = new CountingMetrics()
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const controller = new MemcachedController({
    // eventSuppressMs stands for time passing: repeats of an event are sent again after it.
    ...(opts.eventSuppressMs !== undefined ? { recorder: new ApiEventRecorder(client, new EventAggregator({ suppressForMs: opts.eventSuppressMs }), log) } : {}),
    client,
    chart: () => chart,
    namespaces: opts.namespaces ?? [],
    concurrency: opts.concurrency ?? 2,
    resyncPeriodMs: opts.resyncPeriodMs ?? 600_000,
    ...(opts.discoveryPeriodMs !== undefined ? { discoveryPeriodMs: opts.discoveryPeriodMs } : {}),
    ...(opts.maxConcurrentRecreations !== undefined ? { maxConcurrentRecreations: opts.maxConcurrentRecreations } : {}),
    ...(opts.sustainedFailureMs !== undefined ? { sustainedFailureMs: opts.sustainedFailureMs } : {}),
    ...(opts.podDialer ? { podDialer: opts.podDialer } : {}),
    ...(opts.reloadRetryMs !== undefined ? { reloadRetryMs: opts.reloadRetryMs } : {}),
    ...(opts.reloadSettleMs !== undefined ? { reloadSettleMs: opts.reloadSettleMs } : {}),
    ...(opts.budget !== undefined ? { budget: opts.budget } : {}),
    ...(opts.maxPruneFraction !== undefined ? { maxPruneFraction: opts.maxPruneFraction } : {}),
    log,
    metrics,
  })
  await controller.start()
  controller.runWorkers()
  await watchesOpen(sandbox)
  return {
    controller,
    client,
    metrics,
    async stop() {
      await controller.stop()
      client.close()
    },
  }
}

/**
 * Waits until every informer of the operator has its watch open: a watch-list is synced on its own
 * stream, but after a paginated list (a server that refuses watch-lists) an object created before
 * the watch opens reaches the cache only when the watch does (docs/operator.md). Tests that create an object
 * just before the CR that must refuse it start from a watching operator, as a running one is.
 */
export async function watchesOpen(sandbox: Sandbox, userAgent = 'memcached-operator/test'): Promise<void> {
  await eventually('the operator\'s watches are open', () => {
    const log = sandbox.requests.log().filter((r) => r.userAgent === userAgent && r.code === 200)
    // A watch-list is its own watch; a paginated list (a server refusing watch-lists) is followed by one.
    const lists = log.filter((r) => r.verb === 'list').length
    const watches = log.filter((r) => r.verb === 'watch').length
    return watches > 0 && watches >= lists ? true : undefined
  })
}

/**
 * A sandbox with the CRD and a running operator. `before` runs before the operator starts: what it
 * creates is in the operator's caches from their first list (an object created later reaches them
 * through a watch, with its delay).
 */
export async function startBed(opts: { sandbox?: SandboxOptions; chart?: Chart; concurrency?: number; resyncPeriodMs?: number; eventSuppressMs?: number; discoveryPeriodMs?: number; sustainedFailureMs?: number; podDialer?: PodDialer; reloadRetryMs?: number; reloadSettleMs?: number; budget?: BudgetLimits; before?: (sandbox: Sandbox) => Promise<void> } = {}): Promise<Bed> {
  const chart = opts.chart ?? loadChart()
  const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject], ...opts.sandbox })
  const client = clientFor(sandbox, 'test-user/1', 'test-user')
  await opts.before?.(sandbox)
  const operator = await startOperatorOn(sandbox, opts)
  return {
    sandbox,
    operatorClient: operator.client,
    client,
    controller: operator.controller,
    metrics: operator.metrics,
    async stop() {
      await operator.stop()
      client.close()
      await sandbox.close()
    },
  }
}

/** Polls `fn` until it returns a defined value (or throws after `timeoutMs`). */
export async function eventually<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v !== undefined) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** The verbs that write. */
export const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection'])

/** The operator's write requests in the sandbox's request log (by its user agent). */
export function operatorWrites(sandbox: Sandbox, userAgent = 'memcached-operator/test'): { verb: string; resource: string; subresource?: string; name?: string }[] {
  return sandbox.requests
    .log()
    .filter((r) => r.userAgent === userAgent && WRITE_VERBS.has(r.verb))
    .map((r) => ({ verb: r.verb, resource: r.resource, ...(r.subresource ? { subresource: r.subresource } : {}), ...(r.name ? { name: r.name } : {}) }))
}

/** Resolves once the controller has finished `n` more reconciles than `from`. */
export async function reconciles(metrics: CountingMetrics, from: number, n: number): Promise<void> {
  const total = () => Object.entries(metrics.counts).filter(([k]) => k.startsWith('reconciled:')).reduce((a, [, v]) => a + v, 0)
  await eventually(`${n} reconciles`, () => (total() >= from + n ? true : undefined))
}

/** Reconciles finished so far. */
export function reconcileCount(metrics: CountingMetrics): number {
  return Object.entries(metrics.counts).filter(([k]) => k.startsWith('reconciled:')).reduce((a, [, v]) => a + v, 0)
}

/** `run`'s options as its flags' defaults give them, for `kubeconfig`, with ports chosen by the system. */
export const runOptions = (kubeconfig: string): RunOptions => ({
  kubeconfig,
  namespace: [],
  concurrency: '2',
  resyncPeriod: '10m',
  leaderElectionId: 'memcached-operator-leader',
  metricsBindAddress: '127.0.0.1:0',
  healthProbeBindAddress: '127.0.0.1:0',
})

/** The object in `default`, or undefined when the API server answers 404. */
export async function findObject(c: KubeClient, apiVersion: string, kind: string, name: string): Promise<KubeObject | undefined> {
  try {
    return await c.get({ apiVersion, kind, namespace: 'default', name })
  } catch (err) {
    if (isNotFound(err)) return undefined
    throw err
  }
}

/** What {@link startLoggedBed} starts. */
export interface LoggedBed {
  sandbox: Sandbox
  /** A user's client (user agent test-user/1, field manager test-user). */
  client: KubeClient
  controller: MemcachedController
  metrics: CountingMetrics
  /** Every line the operator logged, at the level asked for. */
  logs: string[]
}

/**
 * A sandbox with the CRD of `crdChart` (pods Ready after 20 ms), and an operator whose chart is
 * whatever `chart()` returns, logging at `level` into `logs`; stopped when `t` ends.
 */
export async function startLoggedBed(t: Test, crdChart: Chart, chart: () => Chart, level: Level = 'trace'): Promise<LoggedBed> {
  const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(crdChart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const client = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => client.close())
  const opClient = clientFor(sandbox)
  const logs: string[] = []
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean))
      done()
    },
  })
  const metrics = new CountingMetrics()
  const controller = new MemcachedController({ client: opClient, chart, namespaces: [], concurrency: 2, resyncPeriodMs: 600_000, log: createLogger({ level, destination }), metrics })
  await controller.start()
  controller.runWorkers()
  t.teardown(async () => {
    await controller.stop()
    opClient.close()
  })
  return { sandbox, client, controller, metrics, logs }
}
