/**
 * The HorizontalPodAutoscaler controller of kube-controller-manager
 * (pkg/controller/podautoscaler/horizontal.go `reconcileAutoscaler`), on a cluster without a
 * metrics API: every period it reads the target's `/scale`, scales a target outside
 * `[minReplicas, maxReplicas]` back to the nearest bound (`SuccessfulRescale`, "Current number of
 * replicas below Spec.MinReplicas"), leaves a target at 0 replicas alone (ScalingDisabled), and
 * otherwise reports that no metric could be read (ScalingActive=False with the metrics client's
 * error, `FailedGetResourceMetric` and `FailedComputeMetricsReplicas` Warnings), as a real
 * controller does where metrics-server is not installed. Status: currentReplicas,
 * desiredReplicas, lastScaleTime, conditions AbleToScale and ScalingActive.
 */
import type { JsonObject, KubeObject } from '../types.ts'
import { ApiError, Client, isConflict, isNotFound, type GVR } from './client.ts'
import { keyOf, type Informer, WorkQueue } from './informer.ts'
import type { EventRecorder } from './events.ts'
import { sameJson } from './replicaset.ts'
import { rfc3339 } from '../../kube/time.ts'

/** autoscaling/v2 horizontalpodautoscalers */
export const horizontalPodAutoscalers: GVR = { group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers' }

/** What a scaleTargetRef's apiVersion and kind name: the resource serving its `/scale`, if any. */
export type ScaleTargetResolver = (apiVersion: string, kind: string) => GVR | undefined

function obj(v: unknown): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : {}
}

/** The metrics client's error for one metric, when no metrics API is served (replica_calculator.go, metrics clients). */
function metricError(metric: JsonObject): { reason: string; message: string } {
  const type = String(metric['type'] ?? '')
  const noResourceMetrics = 'unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)'
  const noCustomMetrics = 'unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered'
  const noExternalMetrics = 'unable to fetch metrics from external metrics API: the server could not find the requested resource (get external.metrics.k8s.io)'
  if (type === 'Resource' || type === 'ContainerResource') {
    const source = obj(metric[type === 'Resource' ? 'resource' : 'containerResource'])
    const name = String(source['name'] ?? '')
    const what = obj(source['target'])['type'] === 'AverageValue' ? 'usage' : 'utilization'
    const container = type === 'ContainerResource' ? ` for container ${String(source['container'] ?? '')}` : ''
    return { reason: type === 'Resource' ? 'FailedGetResourceMetric' : 'FailedGetContainerResourceMetric', message: `failed to get ${name} ${what}: unable to get metrics for resource ${name}${container}: ${noResourceMetrics}` }
  }
  const metricName = (key: string) => String(obj(obj(metric[key])['metric'])['name'] ?? '')
  if (type === 'Pods') return { reason: 'FailedGetPodsMetric', message: `failed to get pods metric value: unable to get metric ${metricName('pods')}: ${noCustomMetrics}` }
  if (type === 'Object') return { reason: 'FailedGetObjectMetric', message: `failed to get object metric value: unable to get metric ${metricName('object')}: ${noCustomMetrics}` }
  return { reason: 'FailedGetExternalMetric', message: `failed to get external metric value: unable to get external metric ${metricName('external')}: ${noExternalMetrics}` }
}

interface Condition {
  type: string
  status: string
  lastTransitionTime: string
  reason: string
  message: string
}

/** horizontal.go setCondition: the transition time moves only when the status changes; new types go last. */
function setCondition(conds: Condition[], type: string, status: string, reason: string, message: string): Condition[] {
  const cur = conds.find((c) => c.type === type)
  const next: Condition = { type, status, lastTransitionTime: cur && cur.status === status ? cur.lastTransitionTime : rfc3339(), reason, message }
  return cur ? conds.map((c) => (c === cur ? next : c)) : [...conds, next]
}

/** Reconciles each HorizontalPodAutoscaler every sync period (see the module comment). */
export class HorizontalPodAutoscalerController {
  #client: Client
  #hpas: Informer
  #resolve: ScaleTargetResolver
  #periodMs: number
  #queue: WorkQueue
  #recorder: EventRecorder

  constructor(client: Client, hpaInformer: Informer, resolve: ScaleTargetResolver, periodMs: number, recorder: EventRecorder) {
    this.#client = client
    this.#recorder = recorder
    this.#hpas = hpaInformer
    this.#resolve = resolve
    this.#periodMs = periodMs
    this.#queue = new WorkQueue((key) => this.#sync(key))
    // enqueueHPA: "Requests are always added to queue with resyncPeriod delay. If there's already
    // request for the HPA in the queue then a new request is always dropped": a new HPA is first
    // reconciled one period after it appears, and a change (the controller's own status writes
    // included) waits for the pending periodic sync.
    hpaInformer.on((type, hpa) => {
      if (type !== 'DELETED') this.#queue.addAfter(keyOf(hpa), this.#periodMs)
    })
  }

  /** Queues every HPA not already waiting for its period (the informer's resync). */
  resync(): void {
    for (const hpa of this.#hpas.list()) this.#queue.addAfter(keyOf(hpa), this.#periodMs)
  }

  /** Starts processing (once the caches have listed). */
  run(): void {
    this.#queue.start()
  }

  /** Stops the work queue. */
  async stop(): Promise<void> {
    await this.#queue.shutdown()
  }

  async #sync(key: string): Promise<void> {
    const hpa = this.#hpas.get(key)
    if (!hpa || hpa.metadata.deletionTimestamp) return
    try {
      await this.#reconcile(hpa)
    } finally {
      this.#queue.addAfter(key, this.#periodMs)
    }
  }

  async #reconcile(hpa: KubeObject): Promise<void> {
    const spec = obj(hpa['spec'])
    const old = obj(hpa['status'])
    let conds = (Array.isArray(old['conditions']) ? structuredClone(old['conditions']) : []) as unknown as Condition[]
    const status = (current: number, desired: number, rescaled: boolean): JsonObject => {
      const s: JsonObject = { desiredReplicas: desired }
      if (current) s['currentReplicas'] = current
      const last = rescaled ? rfc3339() : old['lastScaleTime']
      if (last) s['lastScaleTime'] = last
      if (Array.isArray(old['currentMetrics'])) s['currentMetrics'] = old['currentMetrics']
      if (conds.length > 0) s['conditions'] = conds as unknown as JsonObject[]
      return s
    }
    const ref = obj(spec['scaleTargetRef'])
    const apiVersion = String(ref['apiVersion'] ?? '')
    const kind = String(ref['kind'] ?? '')
    const gvr = this.#resolve(apiVersion, kind)
    let scale: KubeObject
    try {
      if (!gvr) {
        const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : ''
        throw new ApiError(404, 'NotFound', `no matches for kind "${kind}" in group "${group}"`)
      }
      scale = await this.#client.get(gvr, hpa.metadata.namespace, String(ref['name'] ?? ''), { subresource: 'scale' })
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      await this.#event(hpa, 'Warning', 'FailedGetScale', message)
      conds = setCondition(conds, 'AbleToScale', 'False', 'FailedGetScale', `the HPA controller was unable to get the target's current scale: ${message}`)
      await this.#writeStatus(hpa, old, status(num(old['currentReplicas']), num(old['desiredReplicas']), false))
      return
    }
    conds = setCondition(conds, 'AbleToScale', 'True', 'SucceededGetScale', "the HPA controller was able to get the target's current scale")
    const current = num(obj(scale['spec'])['replicas'])
    const min = typeof spec['minReplicas'] === 'number' ? spec['minReplicas'] : 1
    const max = num(spec['maxReplicas'])
    let desired: number
    let reason: string
    if (current === 0 && min !== 0) {
      conds = setCondition(conds, 'ScalingActive', 'False', 'ScalingDisabled', 'scaling is disabled since the replica count of the target is zero')
      await this.#writeStatus(hpa, old, status(current, 0, false))
      return
    } else if (current > max) {
      desired = max
      reason = 'Current number of replicas above Spec.MaxReplicas'
    } else if (current < min) {
      desired = min
      reason = 'Current number of replicas below Spec.MinReplicas'
    } else {
      // computeReplicasForMetrics: no metrics API answers, so every metric is invalid.
      const metrics = (Array.isArray(spec['metrics']) ? spec['metrics'] : []).map(obj)
      const first = metricError(metrics[0] ?? {})
      for (const m of metrics) {
        const e = metricError(m)
        await this.#event(hpa, 'Warning', e.reason, e.message)
      }
      conds = setCondition(conds, 'ScalingActive', 'False', first.reason, `the HPA was unable to compute the replica count: ${first.message}`)
      await this.#writeStatus(hpa, old, status(current, num(old['desiredReplicas']), false))
      await this.#event(hpa, 'Warning', 'FailedComputeMetricsReplicas', `invalid metrics (${metrics.length} invalid out of ${metrics.length}), first error is: ${first.message}`)
      return
    }
    try {
      await this.#client.update(gvr as GVR, { ...scale, spec: { ...obj(scale['spec']), replicas: desired } } as KubeObject, { subresource: 'scale' })
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      await this.#event(hpa, 'Warning', 'FailedRescale', `New size: ${desired}; reason: ${reason}; error: ${message}`)
      conds = setCondition(conds, 'AbleToScale', 'False', 'FailedUpdateScale', `the HPA controller was unable to update the target scale: ${message}`)
      await this.#writeStatus(hpa, old, status(current, num(old['desiredReplicas']), false))
      throw err
    }
    conds = setCondition(conds, 'AbleToScale', 'True', 'SucceededRescale', `the HPA controller was able to update the target scale to ${desired}`)
    await this.#event(hpa, 'Normal', 'SuccessfulRescale', `New size: ${desired}; reason: ${reason}`)
    await this.#writeStatus(hpa, old, status(current, desired, true))
  }

  async #writeStatus(hpa: KubeObject, old: JsonObject, status: JsonObject): Promise<void> {
    if (sameJson(old, status)) return
    try {
      await this.#client.update(horizontalPodAutoscalers, { ...hpa, status } as KubeObject, { subresource: 'status' })
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
    }
  }

  /** An Event on the HPA from `horizontal-pod-autoscaler`, through the controllers' recorder (counted and folded as client-go's is). */
  async #event(hpa: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    this.#recorder.event(hpa, type, reason, message)
  }
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0
}
