/**
 * A Reconciler over a fake client, for the scenarios a sandbox cannot play (a server or webhook
 * that refuses a change every time, somebody taking a name between a delete and a create): one
 * stored object per kind, caches that read each one drifted by another manager (a label), so that
 * every reconcile has something to apply, and the events recorded as "<type> <reason>: <message>".
 */
import type { KubeClient, KubeObject } from '../../operator/controller/client.ts'
import { loadChart } from '../../operator/render/chart.ts'
import { AppliedMemory } from '../../operator/reconcile/applied.ts'
import type { RecreationPacer } from '../../operator/reconcile/pacing.ts'
import { CONTROLLER_INDEX, kindKey, Reconciler, type Cache, type MemcachedObject } from '../../operator/reconcile/reconciler.ts'

/** A Memcached of size 1 in `default`, its uid `cr-<name>`. */
export const fakeCr = (name: string): MemcachedObject => ({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name, namespace: 'default', uid: `cr-${name}`, resourceVersion: '1', generation: 1 }, spec: { size: 1 } }) as MemcachedObject

/** The object as the server stores it: a new uid and resourceVersion. */
export function stamped(obj: KubeObject, n: number): KubeObject {
  return { ...obj, metadata: { ...obj.metadata, uid: `${obj.kind}-${n}`, resourceVersion: String(n) } } as KubeObject
}

export function fakeReconciler(opts: { cr: MemcachedObject; client: KubeClient; stored: Map<string, KubeObject>; pacer?: RecreationPacer }): { reconciler: Reconciler; recorded: string[] } {
  const chart = loadChart()
  const { stored } = opts
  const cache = (kind: string): Cache => ({
    get: () => {
      const o = stored.get(kind)
      return o ? ({ ...o, metadata: { ...o.metadata, resourceVersion: `${o.metadata.resourceVersion}-drifted`, labels: {} } } as KubeObject) : undefined
    },
    byIndex: (index) => (index === CONTROLLER_INDEX && stored.has(kind) ? [stored.get(kind) as KubeObject] : []),
  })
  const recorded: string[] = []
  const reconciler = new Reconciler({
    client: opts.client,
    chart: () => chart,
    memcacheds: { get: () => opts.cr, byIndex: () => [opts.cr] },
    children: new Map(chart.kinds.map((k) => [kindKey(k), cache(k.kind)])),
    pods: { get: () => undefined, byIndex: () => [] },
    memory: new AppliedMemory(),
    events: { record: async (_o, type, reason, message) => void recorded.push(`${type} ${reason}: ${message}`) },
    metrics: { applied() {}, skipped() {}, pruned() {}, failed() {} },
    ...(opts.pacer ? { pacer: opts.pacer } : {}),
  })
  return { reconciler, recorded }
}
