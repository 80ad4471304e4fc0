/** An observer of an instance's pods and endpoints, for tests that change a live CR's workload. */
import { KubeConfig } from '@kubernetes/client-node'
import { KubeClient, type KubeObject } from '../../operator/controller/client.ts'
import { Informer } from '../../operator/controller/informer.ts'
import type { Bed } from './operator.ts'

type Condition = { type: string; status: string; reason: string; message: string }

/** Whether a pod's Ready condition is True. */
export const isReady = (pod: KubeObject) => ((pod.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')

/** What {@link observe} recorded; `stop()` ends the watches (idempotent). */
export interface Observed {
  /** Ready, not terminating pods of the instance, after every pod event. */
  readyPods: number[]
  /** Endpoints with `conditions.ready` in the Service's EndpointSlices, after every slice event. */
  readyEndpoints: number[]
  /** Pods whose controller changed: `<pod>: <kind>/<name> → <kind>/<name>`. */
  stolen: string[]
  /** Every `<reason>: <message>` the CR's Progressing condition had. */
  progressing: Set<string>
  stop(): void
}

/**
 * Watches the instance's pods (label app.kubernetes.io/instance=`name`, namespace default) and the
 * Service's EndpointSlices from now on and records, after every event, how many pods are ready and
 * how many endpoints are ready, and every pod whose controller changed (a workload taking the
 * other's pod).
 */
export async function observe(bed: Bed, name: string): Promise<Observed> {
  const kc = new KubeConfig()
  kc.loadFromFile(bed.sandbox.kubeconfigPath)
  const client = new KubeClient(kc, { userAgent: 'observer/1', resources: { 'discovery.k8s.io/v1/EndpointSlice': { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', namespaced: true } } })
  const readyPods: number[] = []
  const readyEndpoints: number[] = []
  const stolen: string[] = []
  const progressing = new Set<string>()
  const controllerOf = (o: KubeObject) => o.metadata.ownerReferences?.find((r) => r.controller)
  const pods = new Informer(client, { apiVersion: 'v1', kind: 'Pod', namespace: 'default', labelSelector: `app.kubernetes.io/instance=${name}` })
  const countPods = () => readyPods.push(pods.list().filter((p) => isReady(p) && !p.metadata.deletionTimestamp).length)
  pods.onAdd(countPods).onDelete(countPods).onUpdate((before, after) => {
    const [a, b] = [controllerOf(before), controllerOf(after)]
    if (a?.uid !== b?.uid) stolen.push(`${after.metadata.name}: ${a?.kind}/${a?.name} → ${b?.kind}/${b?.name}`)
    countPods()
  })
  const slices = new Informer(client, { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', namespace: 'default', labelSelector: `kubernetes.io/service-name=${name}` })
  const countEndpoints = () =>
    readyEndpoints.push(slices.list().flatMap((s) => ((s as { endpoints?: { conditions?: { ready?: boolean } }[] }).endpoints ?? []).filter((e) => e.conditions?.ready === true)).length)
  slices.onAdd(countEndpoints).onUpdate(countEndpoints).onDelete(countEndpoints)
  const crs = new Informer(client, { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', fieldSelector: `metadata.name=${name}` })
  crs.onUpdate((_, cr) => {
    const p = ((cr.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === 'Progressing')
    if (p) progressing.add(`${p.reason}: ${p.message}`)
  })
  for (const i of [pods, slices, crs]) i.start()
  await Promise.all([pods.waitForSync(), slices.waitForSync(), crs.waitForSync()])
  let stopped = false
  return {
    readyPods,
    readyEndpoints,
    stolen,
    progressing,
    stop: () => {
      if (stopped) return
      stopped = true
      for (const i of [pods, slices, crs]) i.stop()
      client.close()
    },
  }
}
