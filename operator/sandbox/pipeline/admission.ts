/** Admission: kind-specific defaulting (Secret stringData, Namespace finalizers, Service addresses), the mutating plugins and webhooks, validation, and the validating plugins (PodSecurity, ResourceQuota) with the resource quota controller that keeps quota status current. */
import { deepEqual, isObject } from '../../kube/json.ts'
import { forbidden, invalidObject } from '../errors.ts'
import { tableOf } from '../registry.ts'
import { admitOwnerReferences } from '../admission/ownerreferences.ts'
import { admitPodSecurity } from '../admission/podsecurity.ts'
import { admitRestrictedV2 } from '../admission/scc.ts'
import { admitQuota, quotaStatus, type QuotaStore } from '../admission/quota.ts'
import { prepareService } from '../../kube/builtin/service.ts'
import { validateMetadata } from '../../kube/builtin/meta.ts'
import { validateBuiltin } from '../../kube/builtin/validation.ts'
import type { ApiRequest, KubeObject, ResourceType } from '../types.ts'
import { patchTypeOf } from './reply.ts'
import { decodedPart, strictDecodingError, decodes } from './decode.ts'
import { ServerState } from './state.ts'

/** Kind-specific server behaviour plus defaulting, shared by every write. */
export function defaultObject(c: ServerState, type: ResourceType, obj: KubeObject, old: KubeObject | undefined): void {
  if (!type.custom && type.group === '') {
    if (type.kind === 'Secret' && isObject(obj.stringData)) {
      const data = isObject(obj.data) ? { ...obj.data } : {}
      for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(String(v)).toString('base64')
      obj.data = data
      delete obj.stringData
    }
    if (type.kind === 'Namespace') {
      const name = obj.metadata.name ?? ''
      obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': name }
      if (!isObject(obj.spec)) obj.spec = {}
      const spec = obj.spec as Record<string, unknown>
      if (!Array.isArray(spec.finalizers)) spec.finalizers = ['kubernetes']
    }
  }
  type.default?.(obj)
  if (!type.custom && type.group === '' && type.kind === 'Service') {
    const refused = prepareService(obj, old, () => freeServiceIP(c))
    if (refused.length > 0) throw invalidObject(type, obj.metadata.name ?? '', refused)
  }
}

/** A free Service address; reserved only when the Service is stored, so a dry run takes none. */
function freeServiceIP(c: ServerState): string {
  let n = c.nextServiceIP
  let ip: string
  do {
    ip = `10.96.${(n >> 8) & 255}.${n & 255}`
    n++
  } while (c.serviceIPs.has(ip) || ip.endsWith('.0') || ip.endsWith('.255'))
  return ip
}

/** Keeps the set of allocated Service IPs in step with what is stored. */
export function trackServiceIP(c: ServerState, type: ResourceType, obj: KubeObject, stored: boolean): void {
  if (type.custom || type.group !== '' || type.kind !== 'Service') return
  const ip = isObject(obj.spec) ? obj.spec.clusterIP : undefined
  if (typeof ip !== 'string' || ip === 'None' || ip === '') return
  if (stored) c.serviceIPs.add(ip)
  else c.serviceIPs.delete(ip)
}

/** Pruning (CRs) and validation; throws 422 / 400 as the server does, returns warnings. */
export function admit(c: ServerState, type: ResourceType, obj: KubeObject, req: ApiRequest, old: KubeObject | undefined): string[] {
  const warnings: string[] = []
  const decoded = decodedPart(type, req, obj)
  const typedBuiltin = req.typed === true && !type.custom
  // A create or an update decoded its body before defaulting (#decodes); an apply's merged
  // object is decoded here: its configuration's types were checked, but a quantity is any scalar to it.
  if (patchTypeOf(req.contentType) === 'apply' && req.verb === 'patch') decodes(type, req, obj)
  // An apply's configuration was checked for undeclared fields before it was merged (a 500
  // otherwise), and the live object holds none: the merged object has nothing to prune. Nor has
  // a body decoded from protobuf into a built-in kind's type (the sandbox's controllers').
  if (type.prune && patchTypeOf(req.contentType) !== 'apply' && !typedBuiltin) {
    const mode = req.query.get('fieldValidation') ?? 'Warn'
    if (mode === 'Strict') {
      const pruned = type.undeclared ? type.undeclared(decoded) : type.prune(structuredClone(decoded))
      if (pruned.length > 0) throw strictDecodingError(type, req, obj, pruned)
    } else {
      const pruned = type.prune(decoded)
      if (mode !== 'Ignore') for (const p of pruned) warnings.push(`unknown field "${p}"`)
    }
  }
  // OwnerReferencesPermissionEnforcement is a mutating plugin: it runs before validation. Only
  // requests with a user pass through it (the sandbox's own controllers act as the server).
  if (req.user && c.authorize) admitOwnerReferences(type, obj, old, req.user, req.subresource, c.authorize, (g, v, k) => c.registry.byKind(g, v, k))
  // OpenShift's SCC admission is a mutating plugin too, for every Pod (the controllers' included).
  if (c.openshift && !type.custom && req.subresource === undefined) admitRestrictedV2(type, obj, old, c.namespace(obj.metadata.namespace ?? '')?.metadata.annotations)
  if (req.user && req.subresource === undefined) for (const hook of c.mutatingWebhooks) hook(obj, { group: type.group, resource: type.resource, operation: old ? 'UPDATE' : 'CREATE' })
  const causes = type.custom ? validateMetadata(obj) : validateBuiltin(obj, old)
  causes.push(...(type.validate?.(obj, old) ?? []))
  if (causes.length > 0) throw invalidObject(type, obj.metadata.name ?? '', causes)
  // A patch that creates (an apply to a missing object) needs `create` as well as `patch`: its
  // create validation is wrapped in an authorization check (apiserver endpoints/handlers/patch.go,
  // `withAuthorization(…, createAuthorizerAttributes)`), asked before the validating plugins.
  if (!old && req.verb === 'patch' && req.user && c.authorize) {
    const name = obj.metadata.name ?? ''
    const d = c.authorize({ user: req.user, verb: 'create', resourceRequest: true, group: type.group, version: type.version, resource: type.resource, ...(req.namespace ? { namespace: req.namespace } : {}), name })
    if (!d.allowed) throw forbidden(type.group, type.resource, name, d.reason)
  }
  // Validating admission plugins, in kube-apiserver's order: PodSecurity, then ResourceQuota.
  if (!type.custom && req.subresource === undefined) {
    warnings.push(...admitPodSecurity(type, obj, old, type.namespaced ? c.namespace(obj.metadata.namespace ?? '')?.metadata.labels : undefined))
    if (!old && type.namespaced) admitQuota(quotaStore(c), type, obj)
  }
  return warnings
}

/** Whether a namespace is being emptied or is Terminating (creates in it are refused, its quotas left alone). */
export function terminating(c: ServerState, namespace: string): boolean {
  if (c.emptying.has(namespace)) return true
  const status = c.namespace(namespace)?.status
  return isObject(status) && status.phase === 'Terminating'
}

/** What quota admission and the quota controller read: a namespace's quotas and objects. */
function quotaStore(c: ServerState): QuotaStore {
  return {
  quotas: (ns) => c.store.list('/resourcequotas', ns).map((o) => o.obj),
  objects: (ns) => {
    const out: { type: ResourceType; obj: KubeObject }[] = []
    for (const t of c.registry.all()) {
      if (!t.namespaced || t.version !== c.storageVersionOf(t)) continue
      for (const o of c.store.list(tableOf(t), ns)) out.push({ type: t, obj: o.obj })
    }
    return out
  },
  }
}

/**
 * The resource quota controller, run synchronously after every write in a namespace that has
 * quotas: each quota's `status.hard` and `status.used` are recomputed and written through
 * `/status` when they changed.
 */
export function syncQuotas(c: ServerState, namespace: string): void {
  if (c.syncingQuotas || namespace === '' || terminating(c, namespace)) return
  const quotas = c.store.list('/resourcequotas', namespace)
  if (quotas.length === 0) return
  c.syncingQuotas = true
  try {
    for (const q of quotas) {
      const status = quotaStatus(quotaStore(c), q.obj)
      if (deepEqual(status, q.obj.status)) continue
      c.respond({
        verb: 'update', group: '', version: 'v1', resource: 'resourcequotas', subresource: 'status', namespace, name: q.name,
        body: { ...q.copy(), status }, query: new URLSearchParams(), userAgent: 'kube-controller-manager/v1.34.0 (linux/amd64) kubernetes/sandbox/resourcequota-controller',
      })
    }
  } finally {
    c.syncingQuotas = false
  }
}
