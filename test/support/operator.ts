/** An operator against a sandbox, in-process, for integration tests. */
import { KubeConfig } from '@kubernetes/client-node'
import pino from 'pino'
import { memcachedCRD } from '../../operator/api/crd.ts'
import { KubeClient, type KubeObject } from '../../operator/controller/client.ts'
import { loadChart, type Chart } from '../../operator/render/chart.ts'
import { MemcachedController, type ControllerMetrics } from '../../operator/reconcile/controller.ts'
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
  queueHooks = {}
}

export interface Bed {
  sandbox: Sandbox
  client: KubeClient
  controller: MemcachedController
  metrics: CountingMetrics
  stop(): Promise<void>
}

/** A client of the sandbox with the operator's identity. */
export function clientFor(sandbox: Sandbox, userAgent = 'memcached-operator/test'): KubeClient {
  const kc = new KubeConfig()
  kc.loadFromFile(sandbox.kubeconfigPath)
  return new KubeClient(kc, { userAgent, fieldManager: 'memcached-operator' })
}

/** A sandbox with the CRD and a running operator. */
export async function startBed(opts: { sandbox?: SandboxOptions; chart?: Chart; concurrency?: number; resyncPeriodMs?: number } = {}): Promise<Bed> {
  const chart = opts.chart ?? loadChart()
  const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject], ...opts.sandbox })
  const client = clientFor(sandbox)
  const metrics = new CountingMetrics()
  const controller = new MemcachedController({
    client,
    chart: () => chart,
    namespaces: [],
    concurrency: opts.concurrency ?? 2,
    resyncPeriodMs: opts.resyncPeriodMs ?? 600_000,
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    metrics,
  })
  await controller.start()
  controller.runWorkers()
  return {
    sandbox,
    client,
    controller,
    metrics,
    async stop() {
      await controller.stop()
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
