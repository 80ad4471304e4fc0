/**
 * The pods/resize subresource (in-place pod resize, Kubernetes 1.33+), as kube-apiserver serves it:
 * - what a write keeps: kubernetes pkg/registry/core/pod/strategy.go `podResizeStrategy`
 *   (`dropNonResizeUpdates`): the containers' `resources` and `resizePolicy` of the request, all
 *   else — the rest of the spec, the status, labels and annotations — as stored;
 * - what it refuses: pkg/apis/core/validation/validation.go `ValidatePodResize` and
 *   `validateContainerResize`: pod-level resources, static and Windows pods, a changed QoS class, a
 *   node without resize support, requests or limits removed, a memory limit lowered (or added)
 *   unless the container's memory resizePolicy is RestartContainer, anything but cpu and memory
 *   changed.
 * The QoS class is pkg/apis/core/helper/qos `ComputePodQOS`.
 */
import { compareQuantities, quantityOf } from '../kube/quantity.ts'
import type { JsonObject, KubeObject } from './types.ts'

const compareQuantity = (a: string, b: string): number => compareQuantities(quantityOf(a), quantityOf(b))

type Json = Record<string, unknown>
interface Resources {
  requests?: Record<string, string>
  limits?: Record<string, string>
}
interface Container {
  name?: string
  resources?: Resources
  resizePolicy?: { resourceName: string; restartPolicy: string }[]
  restartPolicy?: string
}
export interface ResizeCause {
  reason: string
  field: string
  message: string
}

const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {})
const list = (v: unknown): Container[] => (Array.isArray(v) ? (v as Container[]) : [])
const clone = <T>(v: T): T => structuredClone(v)

/** The stored pod with the request's containers' resources and resizePolicy (`dropNonResizeUpdates`). */
export function resizedPod(next: KubeObject, old: KubeObject): KubeObject {
  const nextSpec = obj(next['spec'])
  const oldSpec = obj(old['spec'])
  const merge = (n: Container[], o: Container[]): Container[] | undefined => {
    // Containers added, removed, re-ordered or renamed: the request as it is, for validation to refuse.
    if (n.length !== o.length || n.some((c, i) => c.name !== o[i]?.name)) return undefined
    return o.map((c, i) => {
      const out: Container = { ...clone(c) }
      const r = n[i]!
      if (r.resources === undefined) delete out.resources
      else out.resources = clone(r.resources)
      if (r.resizePolicy === undefined) delete out.resizePolicy
      else out.resizePolicy = clone(r.resizePolicy)
      return out
    })
  }
  const containers = merge(list(nextSpec['containers']), list(oldSpec['containers']))
  const init = merge(list(nextSpec['initContainers']), list(oldSpec['initContainers']))
  if (!containers || !init) return next
  const spec: Json = { ...clone(oldSpec), containers }
  if (oldSpec['initContainers'] !== undefined) spec['initContainers'] = init
  const pod = clone(old) as KubeObject & Json
  pod['spec'] = spec
  return pod
}

/** Upstream's `ComputePodQOS` over cpu and memory. */
export function podQos(pod: KubeObject): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const spec = obj(pod['spec'])
  const containers = [...list(spec['containers']), ...list(spec['initContainers'])]
  const requests = new Map<string, string>()
  const limits = new Map<string, string>()
  let guaranteed = true
  const nonZero = (q: string) => compareQuantity(q, '0') > 0
  for (const c of containers) {
    const req = c.resources?.requests ?? {}
    const lim = c.resources?.limits ?? {}
    for (const r of ['cpu', 'memory']) {
      if (req[r] !== undefined && nonZero(req[r])) requests.set(r, req[r])
      if (lim[r] !== undefined && nonZero(lim[r])) limits.set(r, lim[r])
    }
    // Guaranteed: every container limits cpu and memory, and requests (when given) equal them.
    for (const r of ['cpu', 'memory']) {
      if (lim[r] === undefined || !nonZero(lim[r])) guaranteed = false
      else if (req[r] !== undefined && compareQuantity(req[r], lim[r]) !== 0) guaranteed = false
    }
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort'
  return guaranteed ? 'Guaranteed' : 'Burstable'
}

/** `ValidatePodResize`'s refusals of `next` (from {@link resizedPod}) over `old`. */
export function validateResize(next: KubeObject, old: KubeObject): ResizeCause[] {
  const forbidden = (field: string, message: string): ResizeCause => ({ reason: 'FieldValueForbidden', field, message: `Forbidden: ${message}` })
  const oldSpec = obj(old['spec'])
  const nextSpec = obj(next['spec'])
  const podLevel = (s: Json) => Object.keys(obj(obj(s['resources'])['requests'])).length + Object.keys(obj(obj(s['resources'])['limits'])).length > 0
  if (podLevel(oldSpec) || podLevel(nextSpec)) return [forbidden('', 'pods with pod-level resources cannot be resized')]
  if (old.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined) return [forbidden('', 'static pods cannot be resized')]
  if (obj(oldSpec['os'])['name'] === 'windows') return [forbidden('', 'windows pods cannot be resized')]
  const causes: ResizeCause[] = []
  if (podQos(old) !== podQos(next)) causes.push({ reason: 'FieldValueInvalid', field: 'spec', message: `Invalid value: "${String(obj(next['status'])['qosClass'] ?? '')}": Pod QOS Class may not change as a result of resizing` })
  if (!resizeSupported(old)) causes.push(forbidden('spec', 'Pod running on node without support for resize'))
  const oldContainers = list(oldSpec['containers'])
  const nextContainers = list(nextSpec['containers'])
  if (nextContainers.length !== oldContainers.length || nextContainers.some((c, i) => c.name !== oldContainers[i]?.name)) return [...causes, forbidden('spec', 'only cpu and memory resources are mutable')]
  oldContainers.forEach((c, i) => causes.push(...validateContainerResize(nextContainers[i]!, c, `spec.containers[${i}].resources`)))
  // Restartable init containers (sidecars) resize as containers; others' resources are immutable.
  const oldInit = list(oldSpec['initContainers'])
  const nextInit = list(nextSpec['initContainers'])
  oldInit.forEach((c, i) => {
    if (c.restartPolicy === 'Always') causes.push(...validateContainerResize(nextInit[i] ?? {}, c, `spec.initContainers[${i}].resources`))
    else if (JSON.stringify(c.resources ?? {}) !== JSON.stringify(nextInit[i]?.resources ?? {})) causes.push(forbidden('spec', 'resources for non-sidecar init containers are immutable'))
  })
  if (causes.length > 0) return causes
  // Anything but cpu and memory: the request with cpu and memory taken back from the stored pod must equal it.
  const withoutCpuMemory = (n: Container, o: Container): Container => {
    const take = (nl: Record<string, string> | undefined, ol: Record<string, string> | undefined) => {
      if (ol === undefined) return undefined
      const out = { ...(nl ?? {}) }
      delete out['cpu']
      delete out['memory']
      if (ol['cpu'] !== undefined) out['cpu'] = ol['cpu']
      if (ol['memory'] !== undefined) out['memory'] = ol['memory']
      return out
    }
    const resources: Resources = {}
    const l = take(n.resources?.limits, o.resources?.limits)
    const r = take(n.resources?.requests, o.resources?.requests)
    if (l) resources.limits = l
    if (r) resources.requests = r
    return { ...n, resources }
  }
  const canonical = (c: Container) => JSON.stringify(sortKeys({ ...c, resources: c.resources ?? {} }))
  if (nextContainers.some((c, i) => canonical(withoutCpuMemory(c, oldContainers[i]!)) !== canonical({ ...oldContainers[i]!, resources: oldContainers[i]!.resources ?? {} }))) causes.push(forbidden('spec', 'only cpu and memory resources are mutable'))
  return causes
}

function validateContainerResize(n: Container, o: Container, path: string): ResizeCause[] {
  const causes: ResizeCause[] = []
  const removed = (nl: Record<string, string> | undefined, ol: Record<string, string> | undefined) => Object.keys(ol ?? {}).some((k) => !(k in (nl ?? {})))
  if (removed(n.resources?.requests, o.resources?.requests)) causes.push({ reason: 'FieldValueForbidden', field: `${path}.requests`, message: 'Forbidden: resource requests cannot be removed' })
  if (removed(n.resources?.limits, o.resources?.limits)) causes.push({ reason: 'FieldValueForbidden', field: `${path}.limits`, message: 'Forbidden: resource limits cannot be removed' })
  const policy = (n.resizePolicy ?? []).find((p) => p.resourceName === 'memory')?.restartPolicy ?? ''
  if (policy === 'NotRequired' || policy === '') {
    const nl = n.resources?.limits?.['memory']
    const ol = o.resources?.limits?.['memory']
    if (nl !== undefined && ol !== undefined && compareQuantity(nl, ol) < 0) causes.push({ reason: 'FieldValueForbidden', field: `${path}.limits[memory]`, message: 'Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer' })
    else if (nl !== undefined && ol === undefined) causes.push({ reason: 'FieldValueForbidden', field: `${path}.limits[memory]`, message: 'Forbidden: memory limits cannot be added unless resizePolicy is RestartContainer' })
  }
  return causes
}

/** `isPodResizeRequestSupported`: a running container's status reports its resources (a kubelet that resizes). */
function resizeSupported(pod: KubeObject): boolean {
  for (const c of (obj(pod['status'])['containerStatuses'] as Json[] | undefined) ?? []) {
    if (obj(c['state'])['running'] !== undefined) return c['resources'] !== undefined
  }
  return true
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys)
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Json)[k])]))
  return v
}

/** The resources a kubelet that resizes reports for a container: what its spec asks. */
export function actuatedResources(container: JsonObject): JsonObject {
  const r = obj(container['resources']) as JsonObject
  const out: JsonObject = {}
  if (r['requests'] !== undefined) out['requests'] = clone(r['requests'])
  if (r['limits'] !== undefined) out['limits'] = clone(r['limits'])
  return out
}
