/**
 * A scheduler and a kubelet for one node, `sandbox-node`: every new pod is bound to the node at
 * once (what kube-scheduler's binding does: `spec.nodeName`), and after `podReadyDelayMs` it is
 * reported Running and Ready with one running status per container, a pod IP and the host IP.
 *
 * Containers whose image matches a rule of {@link PodFailures} fail instead, as a kubelet reports
 * an image it cannot pull, a crash loop or a readiness probe that never passes (pod-failures.ts).
 *
 * Not simulated: probes of healthy containers, init containers' own statuses, graceful termination
 * (a pod that is marked for deletion without finalizers is deleted at once with grace period 0).
 */
import { actuatedResources } from '../pod-resize.ts'
import type { JsonObject, KubeObject } from '../types.ts'
import { Client, isConflict, isNotFound, pods } from './client.ts'
import type { Informer } from './informer.ts'
import { isPodReady } from './replicaset.ts'
import { rfc3339 } from '../../kube/time.ts'
import { crashBackOffMs, failingStatus, reportsAgain, type PodFailures } from './pod-failures.ts'

/** The one node pods are scheduled to. */
export const nodeName = 'sandbox-node'
/** The node's address, reported as every pod's hostIP. */
export const hostIP = '172.18.0.2'

function obj(v: unknown): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : {}
}

/** The status a kubelet reports for a pod whose containers all run. */
export function runningStatus(pod: KubeObject, podIP: string, startTime: string): JsonObject {
  const spec = obj(pod['spec'])
  const containers = (Array.isArray(spec['containers']) ? spec['containers'] : []).map(obj)
  const cond = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: startTime })
  return {
    phase: 'Running',
    conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(cond),
    hostIP,
    hostIPs: [{ ip: hostIP }],
    podIP,
    podIPs: [{ ip: podIP }],
    startTime,
    containerStatuses: containers.map((c) => ({
      name: c['name'] ?? '',
      state: { running: { startedAt: startTime } },
      lastState: {},
      ready: true,
      restartCount: 0,
      image: c['image'] ?? '',
      imageID: '',
      containerID: `containerd://${(pod.metadata.uid ?? '').replaceAll('-', '')}${String(c['name'] ?? '')}`.slice(0, 77),
      started: true,
      // What a kubelet that resizes in place (1.33+) reports: the resources the container runs with.
      allocatedResources: obj(actuatedResources(c)['requests']),
      resources: actuatedResources(c),
    })),
    qosClass: obj(pod['status'])['qosClass'] ?? 'BestEffort',
  }
}

/** Whether a running pod's containers run with other resources than their spec asks (a resize to carry out). */
function resizePending(pod: KubeObject): boolean {
  const containers = (Array.isArray(obj(pod['spec'])['containers']) ? (obj(pod['spec'])['containers'] as unknown[]) : []).map(obj)
  const statuses = (obj(pod['status'])['containerStatuses'] as JsonObject[] | undefined) ?? []
  return statuses.some((s) => {
    const c = containers.find((x) => x['name'] === s['name'])
    return c !== undefined && s['resources'] !== undefined && JSON.stringify(s['resources']) !== JSON.stringify(actuatedResources(c))
  })
}

/** The status of a pod bound to the node whose containers are being created. */
export function creatingStatus(pod: KubeObject, time: string): JsonObject {
  const spec = obj(pod['spec'])
  const containers = (Array.isArray(spec['containers']) ? spec['containers'] : []).map(obj)
  const names = containers.map((c) => String(c['name'] ?? '')).join(' ')
  const cond = (type: string, status: string, extra: JsonObject = {}) => ({ type, status, lastProbeTime: null, lastTransitionTime: time, ...extra })
  const notReady = { reason: 'ContainersNotReady', message: `containers with unready status: [${names}]` }
  return {
    phase: 'Pending',
    conditions: [cond('PodReadyToStartContainers', 'False'), cond('Initialized', 'True'), cond('Ready', 'False', notReady), cond('ContainersReady', 'False', notReady), cond('PodScheduled', 'True')],
    hostIP,
    hostIPs: [{ ip: hostIP }],
    startTime: time,
    containerStatuses: containers.map((c) => ({ name: c['name'] ?? '', state: { waiting: { reason: 'ContainerCreating' } }, lastState: {}, ready: false, restartCount: 0, image: c['image'] ?? '', imageID: '', started: false })),
    qosClass: obj(pod['status'])['qosClass'] ?? 'BestEffort',
  }
}

/** Schedules pods to the node and reports them Running/Ready after the configured delay. */
export class Kubelet {
  #scheduler: Client
  #kubelet: Client
  #pods: Informer
  #delayMs: number
  #timers = new Map<string, NodeJS.Timeout>()
  #inflight = new Set<Promise<void>>()
  /** uid → the binding (and ContainerCreating report) in flight */
  #binding = new Map<string, Promise<void>>()
  #nextIP = 2
  #stopped = false
  #failures: PodFailures | undefined
  /** uid → the failing pod's IP and its next attempt (its timer in #timers drives it, not pod events). */
  #failing = new Map<string, { podIP: string; since: string; attempt: number; again: boolean }>()

  constructor(scheduler: Client, kubelet: Client, podInformer: Informer, delayMs: number, failures?: PodFailures) {
    this.#scheduler = scheduler
    this.#kubelet = kubelet
    this.#pods = podInformer
    this.#delayMs = delayMs
    this.#failures = failures
    podInformer.on((type, pod) => {
      if (type === 'DELETED') this.#cancel(pod.metadata.uid ?? '')
      else this.#consider(pod)
    })
  }

  /** Re-examines every cached pod (periodic resync). */
  resync(): void {
    for (const pod of this.#pods.list()) this.#consider(pod)
  }

  /** Cancels pending work and waits for requests in flight. */
  async stop(): Promise<void> {
    this.#stopped = true
    for (const t of this.#timers.values()) clearTimeout(t)
    this.#timers.clear()
    await Promise.allSettled([...this.#inflight])
  }

  #cancel(uid: string): void {
    const t = this.#timers.get(uid)
    if (t) clearTimeout(t)
    this.#timers.delete(uid)
    this.#failing.delete(uid)
  }

  #track(p: Promise<void>): void {
    const tracked = p.catch(() => undefined).finally(() => this.#inflight.delete(tracked))
    this.#inflight.add(tracked)
  }

  #consider(pod: KubeObject): void {
    if (this.#stopped) return
    const uid = pod.metadata.uid ?? ''
    if (pod.metadata.deletionTimestamp) {
      this.#cancel(uid)
      if ((pod.metadata.finalizers ?? []).length === 0) this.#track(this.#forceDelete(pod))
      return
    }
    const spec = obj(pod['spec'])
    if (spec['nodeName'] && spec['nodeName'] !== nodeName) return
    if (!spec['nodeName'] && !this.#binding.has(uid)) {
      const binding = this.#bind(pod).finally(() => this.#binding.delete(uid))
      this.#binding.set(uid, binding.catch(() => undefined))
      this.#track(binding)
    }
    if (isPodReady(pod)) {
      if (resizePending(pod)) this.#track(this.#actuateResize(pod))
      return
    }
    if (this.#timers.has(uid) || this.#failing.has(uid)) return
    this.#timers.set(uid, setTimeout(() => {
      this.#timers.delete(uid)
      this.#track(this.#start(pod.metadata.namespace, pod.metadata.name ?? '', uid))
    }, this.#delayMs))
  }

  async #bind(pod: KubeObject): Promise<void> {
    try {
      await this.#scheduler.mergePatch(pods, pod.metadata.namespace, pod.metadata.name ?? '', { spec: { nodeName } })
      // What `kubectl get pods -w` shows between scheduling and Running.
      if (this.#delayMs > 0) await this.#kubelet.mergePatch(pods, pod.metadata.namespace, pod.metadata.name ?? '', { status: creatingStatus(pod, rfc3339()) }, { subresource: 'status' })
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
    }
  }

  async #forceDelete(pod: KubeObject): Promise<void> {
    try {
      await this.#kubelet.delete(pods, pod.metadata.namespace, pod.metadata.name ?? '', { gracePeriodSeconds: 0, uid: pod.metadata.uid ?? '' })
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
    }
  }

  /** A resize (pods/resize) carried out at once: the containers run with what their spec asks. */
  async #actuateResize(pod: KubeObject): Promise<void> {
    const spec = obj(pod['spec'])
    const containers = (Array.isArray(spec['containers']) ? spec['containers'] : []).map(obj)
    const statuses = (obj(pod['status'])['containerStatuses'] as JsonObject[] | undefined) ?? []
    const containerStatuses = statuses.map((s) => {
      const c = containers.find((x) => x['name'] === s['name'])
      return c ? { ...s, allocatedResources: obj(actuatedResources(c)['requests']), resources: actuatedResources(c) } : s
    })
    try {
      await this.#kubelet.mergePatch(pods, pod.metadata.namespace, pod.metadata.name ?? '', { status: { containerStatuses } }, { subresource: 'status' })
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err
    }
  }

  /**
   * Reports a pod whose containers fail (pod-failures.ts), then again after the kubelet's back-off
   * while it keeps failing: a crash loop's restartCount grows, a failed pull turns ImagePullBackOff.
   */
  async #fail(namespace: string | undefined, name: string, uid: string): Promise<void> {
    const key = namespace ? `${namespace}/${name}` : name
    const pod = this.#pods.get(key)
    if (this.#stopped || !pod || pod.metadata.uid !== uid || pod.metadata.deletionTimestamp) return
    let state = this.#failing.get(uid)
    if (!state) {
      const n = this.#nextIP++
      state = { podIP: `10.244.${(n >> 8) & 255}.${n & 255}`, since: rfc3339(), attempt: 1, again: true }
      this.#failing.set(uid, state)
    }
    const failures = this.#failures?.failuresOf(pod) ?? new Map()
    const backOff = crashBackOffMs(state.attempt, Math.max(this.#delayMs, 10))
    try {
      if (!obj(pod['spec'])['nodeName']) await this.#scheduler.mergePatch(pods, namespace, name, { spec: { nodeName } })
      const status = { ...failingStatus(pod, failures, state.podIP, state.since, state.attempt, backOff, rfc3339()), hostIP, hostIPs: [{ ip: hostIP }] }
      await this.#kubelet.mergePatch(pods, namespace, name, { status }, { subresource: 'status' })
      state.again = reportsAgain(failures, state.attempt)
      state.attempt++
    } catch (err) {
      if (isNotFound(err)) return void this.#failing.delete(uid)
      if (!isConflict(err)) throw err
    } finally {
      if (!this.#stopped && this.#failing.get(uid)?.again && !this.#timers.has(uid)) {
        const timer = setTimeout(() => {
          this.#timers.delete(uid)
          this.#track(this.#fail(namespace, name, uid))
        }, backOff)
        timer.unref?.()
        this.#timers.set(uid, timer)
      }
    }
  }

  async #start(namespace: string | undefined, name: string, uid: string): Promise<void> {
    const key = namespace ? `${namespace}/${name}` : name
    await this.#binding.get(uid)
    const pod = this.#pods.get(key)
    if (!pod || pod.metadata.uid !== uid || pod.metadata.deletionTimestamp || isPodReady(pod)) return
    const failures = this.#failures?.failuresOf(pod)
    if (failures !== undefined && failures.size > 0) return this.#fail(namespace, name, uid)
    const n = this.#nextIP++
    const podIP = `10.244.${(n >> 8) & 255}.${n & 255}`
    try {
      if (!obj(pod['spec'])['nodeName']) await this.#scheduler.mergePatch(pods, namespace, name, { spec: { nodeName } })
      await this.#kubelet.mergePatch(pods, namespace, name, { status: runningStatus(pod, podIP, rfc3339()) }, { subresource: 'status' })
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return
      // Anything else (a fault, a 500): try again shortly, as a kubelet's status manager would.
      if (!this.#stopped && !this.#timers.has(uid)) {
        this.#timers.set(uid, setTimeout(() => {
          this.#timers.delete(uid)
          this.#track(this.#start(namespace, name, uid))
        }, 100))
      }
    }
  }
}
