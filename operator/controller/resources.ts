/** The resource table: where each kind is served (group, version, plural, scope), and its URL paths. No discovery round trip per call. */
import type { ResourceInfo, ResourceRef } from './types.ts'

export const builtinResources: Record<string, ResourceInfo> = {
  'v1/Pod': { group: '', version: 'v1', plural: 'pods', namespaced: true },
  'v1/Service': { group: '', version: 'v1', plural: 'services', namespaced: true },
  'v1/ServiceAccount': { group: '', version: 'v1', plural: 'serviceaccounts', namespaced: true },
  'v1/ConfigMap': { group: '', version: 'v1', plural: 'configmaps', namespaced: true },
  'v1/Secret': { group: '', version: 'v1', plural: 'secrets', namespaced: true },
  'v1/Event': { group: '', version: 'v1', plural: 'events', namespaced: true },
  'v1/Namespace': { group: '', version: 'v1', plural: 'namespaces', namespaced: false },
  'apps/v1/Deployment': { group: 'apps', version: 'v1', plural: 'deployments', namespaced: true },
  'apps/v1/ReplicaSet': { group: 'apps', version: 'v1', plural: 'replicasets', namespaced: true },
  'apps/v1/StatefulSet': { group: 'apps', version: 'v1', plural: 'statefulsets', namespaced: true },
  'networking.k8s.io/v1/NetworkPolicy': { group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies', namespaced: true },
  'policy/v1/PodDisruptionBudget': { group: 'policy', version: 'v1', plural: 'poddisruptionbudgets', namespaced: true },
  'coordination.k8s.io/v1/Lease': { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespaced: true },
  'events.k8s.io/v1/Event': { group: 'events.k8s.io', version: 'v1', plural: 'events', namespaced: true },
  'cache.example.com/v1alpha1/Memcached': { group: 'cache.example.com', version: 'v1alpha1', plural: 'memcacheds', namespaced: true },
  'cache.example.com/v1alpha1/ChartRevision': { group: 'cache.example.com', version: 'v1alpha1', plural: 'chartrevisions', namespaced: false },
  'cache.example.com/v1alpha1/Rollout': { group: 'cache.example.com', version: 'v1alpha1', plural: 'rollouts', namespaced: false },
}

/** Thrown for a kind missing from the resource table. */
export class UnknownKindError extends Error {
  override name = 'UnknownKindError'
}

/**
 * The resource table entry of a kind; `extra` entries (keyed `apiVersion/Kind`) take precedence.
 * @throws UnknownKindError
 */
export function resourceInfo(ref: ResourceRef, extra?: Record<string, ResourceInfo>): ResourceInfo {
  const key = `${ref.apiVersion}/${ref.kind}`
  const info = extra?.[key] ?? builtinResources[key]
  if (!info) throw new UnknownKindError(`no resource known for ${ref.kind} in ${ref.apiVersion}`)
  return info
}

/**
 * The URL path of a resource collection or object:
 * `/api/v1/namespaces/ns/pods/name/status`, `/apis/apps/v1/deployments`, …
 */
export function resourcePath(info: ResourceInfo, opts: { namespace?: string | undefined; name?: string | undefined; subresource?: string | undefined } = {}): string {
  let p = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`
  if (info.namespaced && opts.namespace) p += `/namespaces/${encodeURIComponent(opts.namespace)}`
  p += `/${info.plural}`
  if (opts.name !== undefined) p += `/${encodeURIComponent(opts.name)}`
  if (opts.subresource) p += `/${opts.subresource}`
  return p
}
