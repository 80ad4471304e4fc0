/**
 * ResourceQuota (its validation is kube/builtin/resourcequota.ts): the usage a quota controller keeps in `status` (pkg/quota/v1/evaluator/core: pods, services and
 * object counts), and the admission plugin that refuses a create which would exceed a quota or
 * lacks a compute resource a quota limits (plugin/pkg/admission/resourcequota/controller.go
 * `checkRequest`), with its messages:
 * `pods "x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`,
 * `pods "x" is forbidden: failed quota: q: must specify limits.memory`.
 */
import { forbidden } from '../errors.ts'
import { addQuantities, compareQuantities, formatQuantity, quantityOf, zeroQuantity, type Quantity } from '../../kube/quantity.ts'
import type { KubeObject, ResourceType } from '../types.ts'
import { isObj } from '../../kube/builtin/field.ts'

type Usage = Map<string, Quantity>

function quantity(v: unknown): Quantity | undefined {
  if (typeof v !== 'string' && typeof v !== 'number') return undefined
  try {
    return quantityOf(v)
  } catch {
    return undefined
  }
}

function add(u: Usage, name: string, v: Quantity): void {
  const cur = u.get(name)
  u.set(name, cur ? addQuantities(cur, v) : v)
}

const one = quantityOf(1)

function containers(spec: Record<string, unknown>, key: string): Record<string, unknown>[] {
  return Array.isArray(spec[key]) ? (spec[key] as unknown[]).filter(isObj) : []
}

/** podComputeUsageHelper: what one container asks for, by quota resource name. */
function containerUsage(c: Record<string, unknown>): Usage {
  const res = isObj(c.resources) ? c.resources : {}
  const requests = isObj(res.requests) ? res.requests : {}
  const limits = isObj(res.limits) ? res.limits : {}
  const u: Usage = new Map([['pods', one]])
  for (const r of ['cpu', 'memory', 'ephemeral-storage']) {
    const req = quantity(requests[r])
    if (req) {
      u.set(r, req)
      u.set(`requests.${r}`, req)
    }
    const lim = quantity(limits[r])
    if (lim) u.set(`limits.${r}`, lim)
  }
  return u
}

/** Whether a pod counts against quota: not Succeeded or Failed (QuotaV1Pod). */
function podCounts(pod: KubeObject): boolean {
  const phase = isObj(pod.status) ? pod.status.phase : undefined
  return phase !== 'Succeeded' && phase !== 'Failed'
}

/** PodUsageFunc: containers summed, init containers at their largest, plus the pod itself. */
function podUsage(pod: KubeObject): Usage {
  const spec = isObj(pod.spec) ? pod.spec : {}
  const sum: Usage = new Map()
  for (const c of containers(spec, 'containers')) for (const [k, v] of containerUsage(c)) if (k !== 'pods') add(sum, k, v)
  for (const c of containers(spec, 'initContainers')) {
    for (const [k, v] of containerUsage(c)) {
      const cur = sum.get(k)
      if (k !== 'pods' && (!cur || compareQuantities(v, cur) > 0)) sum.set(k, v)
    }
  }
  sum.set('pods', one)
  sum.set('count/pods', one)
  return sum
}

/** The quota usage of one object of a type: object counts, plus pods' and Services' own resources. */
export function usageOf(type: ResourceType, obj: KubeObject): Usage {
  const isCore = type.group === ''
  if (isCore && type.resource === 'pods') return podCounts(obj) ? podUsage(obj) : new Map()
  const u: Usage = new Map([[`count/${isCore ? type.resource : `${type.resource}.${type.group}`}`, one]])
  if (isCore && ['services', 'secrets', 'configmaps', 'resourcequotas', 'persistentvolumeclaims', 'replicationcontrollers'].includes(type.resource)) u.set(type.resource, one)
  if (isCore && type.resource === 'services') {
    const spec = isObj(obj.spec) ? obj.spec : {}
    if (spec.type === 'LoadBalancer') u.set('services.loadbalancers', one)
    if (spec.type === 'LoadBalancer' || spec.type === 'NodePort') u.set('services.nodeports', quantityOf(Array.isArray(spec.ports) ? spec.ports.length : 0))
  }
  return u
}

/** The `spec.hard` of a quota as quantities (unparseable entries left out: validation refused them). */
function hardOf(quota: KubeObject): Usage {
  const hard = isObj(quota.spec) && isObj(quota.spec.hard) ? quota.spec.hard : {}
  const out: Usage = new Map()
  for (const [k, v] of Object.entries(hard)) {
    const x = quantity(v)
    if (x) out.set(k, x)
  }
  return out
}

/** Quotas with scopes are not enforced here (a deviation the README lists). */
function isScoped(quota: KubeObject): boolean {
  const spec = isObj(quota.spec) ? quota.spec : {}
  return (Array.isArray(spec.scopes) && spec.scopes.length > 0) || isObj(spec.scopeSelector)
}

function resourceList(u: Usage, names: Iterable<string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const n of [...names].sort()) out[n] = formatQuantity(u.get(n) ?? zeroQuantity)
  return out
}

/** prettyPrint: `a=1,b=2Gi`, keys sorted. */
function pretty(u: Usage, names: string[]): string {
  return [...names].sort().map((n) => `${n}=${formatQuantity(u.get(n) ?? zeroQuantity)}`).join(',')
}

/** What the quota admission and controller need of the server. */
export interface QuotaStore {
  /** The ResourceQuotas of a namespace. */
  quotas(namespace: string): KubeObject[]
  /** Every stored object of every served namespaced type in a namespace, with its type. */
  objects(namespace: string): { type: ResourceType; obj: KubeObject }[]
}

/**
 * A quota's `status` as the quota controller computes it: `hard` copied from the spec, `used`
 * summed over the namespace's objects for each resource the quota limits.
 */
export function quotaStatus(store: QuotaStore, quota: KubeObject): { hard: Record<string, string>; used: Record<string, string> } {
  const hard = hardOf(quota)
  const used: Usage = new Map([...hard.keys()].map((k) => [k, zeroQuantity]))
  for (const { type, obj } of store.objects(quota.metadata.namespace ?? '')) {
    for (const [k, v] of usageOf(type, obj)) if (hard.has(k)) add(used, k, v)
  }
  const hardText = isObj(quota.spec) && isObj(quota.spec.hard) ? quota.spec.hard : {}
  return { hard: Object.fromEntries(Object.keys(hardText).sort().map((k) => [k, formatQuantity(hard.get(k) ?? zeroQuantity)])), used: resourceList(used, hard.keys()) }
}

const computeResources = ['cpu', 'memory', 'requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory']

/**
 * The ResourceQuota admission of a create: for each quota of the namespace (by name), a pod must
 * name every compute resource the quota limits in each container, and the new usage must stay
 * within `status.hard`. Throws the server's 403.
 */
export function admitQuota(store: QuotaStore, type: ResourceType, obj: KubeObject): void {
  const namespace = obj.metadata.namespace ?? ''
  const quotas = store.quotas(namespace).filter((x) => !isScoped(x)).sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1))
  if (quotas.length === 0) return
  const name = obj.metadata.name ?? ''
  const refuse = (why: string) => forbidden(type.group, type.resource, name, why)
  const isPod = type.group === '' && type.resource === 'pods'
  const delta = usageOf(type, obj)
  for (const quota of quotas) {
    const hard = hardOf(quota)
    if (!isPod) continue
    const required = computeResources.filter((r) => hard.has(r))
    if (required.length === 0) continue
    const spec = isObj(obj.spec) ? obj.spec : {}
    const missing = new Set<string>()
    for (const c of [...containers(spec, 'containers'), ...containers(spec, 'initContainers')]) {
      const have = containerUsage(c)
      for (const r of required) if (!have.has(r)) missing.add(r)
    }
    if (missing.size > 0) throw refuse(`failed quota: ${quota.metadata.name ?? ''}: must specify ${[...missing].sort().join(',')}`)
  }
  for (const [k, v] of delta) if (v.mantissa === 0n) delta.delete(k)
  if (delta.size === 0) return
  for (const quota of quotas) {
    const status = isObj(quota.status) ? quota.status : {}
    const hardStatus: Usage = new Map()
    for (const [k, v] of Object.entries(isObj(status.hard) ? status.hard : {})) {
      const x = quantity(v)
      if (x) hardStatus.set(k, x)
    }
    const used: Usage = new Map()
    for (const [k, v] of Object.entries(isObj(status.used) ? status.used : {})) {
      const x = quantity(v)
      if (x) used.set(k, x)
    }
    const requested = [...delta.keys()].filter((k) => hardStatus.has(k))
    const exceeded = requested.filter((k) => compareQuantities(addQuantities(used.get(k) ?? zeroQuantity, delta.get(k) ?? zeroQuantity), hardStatus.get(k) ?? zeroQuantity) > 0)
    if (exceeded.length > 0) {
      throw refuse(`exceeded quota: ${quota.metadata.name ?? ''}, requested: ${pretty(delta, exceeded)}, used: ${pretty(used, exceeded)}, limited: ${pretty(hardStatus, exceeded)}`)
    }
  }
}
