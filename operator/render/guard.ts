/**
 * What a chart may produce for an instance: only namespaced kinds the operator is allowed to
 * manage, only in the instance's namespace, with valid and unique names. The operator refuses the
 * whole render when any object breaks a rule, so nothing of it is half-applied.
 */
import type { RenderedObject } from './manifest.ts'
import { isDnsLabel, isDnsSubdomain } from './names.ts'

/** A kind the operator manages, with its REST resource (the RBAC rules grant exactly these). */
export interface ManagedKind {
  apiVersion: string
  kind: string
  resource: string
  /**
   * Served only where an add-on is installed (the Prometheus Operator's, cert-manager's): the guard
   * admits it, but nothing watches, lists or prunes it until the operator learns from discovery
   * whether the cluster serves it.
   */
  optional?: boolean
}

/** The kinds a chart may render. All are namespaced. */
export const MANAGED_KINDS: readonly ManagedKind[] = [
  { apiVersion: 'v1', kind: 'ServiceAccount', resource: 'serviceaccounts' },
  { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps' },
  { apiVersion: 'v1', kind: 'Service', resource: 'services' },
  { apiVersion: 'apps/v1', kind: 'Deployment', resource: 'deployments' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', resource: 'poddisruptionbudgets' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet', resource: 'statefulsets' },
  // Every cluster serves NetworkPolicies, but the sandbox does not yet: optional until it does.
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', resource: 'networkpolicies', optional: true },
  { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', resource: 'servicemonitors', optional: true },
  { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', resource: 'prometheusrules', optional: true },
  { apiVersion: 'cert-manager.io/v1', kind: 'Certificate', resource: 'certificates', optional: true },
]

/** The kinds the operator watches, lists and prunes: the managed kinds that every cluster serves. */
export const WATCHED_KINDS: readonly ManagedKind[] = MANAGED_KINDS.filter((k) => !k.optional)

/** Where each managed kind is served, for a client's resource table (keyed `apiVersion/Kind`). */
export function managedResources(): Record<string, { group: string; version: string; plural: string; namespaced: boolean }> {
  return Object.fromEntries(
    MANAGED_KINDS.map((k) => {
      const [group, version] = k.apiVersion.includes('/') ? (k.apiVersion.split('/') as [string, string]) : ['', k.apiVersion]
      return [`${k.apiVersion}/${k.kind}`, { group, version, plural: k.resource, namespaced: true }]
    }),
  )
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

/** A label or annotation key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
function isQualifiedName(key: string): boolean {
  const slash = key.lastIndexOf('/')
  return LABEL_KEY.test(key) && key.length - slash - 1 <= 63 && slash <= 253
}

/** Every rule an instance's objects break, as `Kind/name: problem`; empty when all is well. */
export function guardObjects(objects: RenderedObject[], namespace: string): string[] {
  const problems: string[] = []
  const seen = new Set<string>()
  for (const o of objects) {
    const id = `${o.kind}/${o.metadata.name}`
    const managed = MANAGED_KINDS.find((k) => k.kind === o.kind && k.apiVersion === o.apiVersion)
    if (!managed) {
      problems.push(`${id}: kind ${o.apiVersion} ${o.kind} is not one the operator manages (${MANAGED_KINDS.map((k) => k.kind).join(', ')})`)
    }
    if (o.metadata.namespace !== namespace) {
      problems.push(`${id}: namespace ${JSON.stringify(o.metadata.namespace)} is not the instance's namespace ${JSON.stringify(namespace)}`)
    }
    const name = o.metadata.name
    const validName = o.kind === 'Service' ? isDnsLabel(name) : isDnsSubdomain(name)
    if (!validName) {
      problems.push(`${id}: invalid name: ${o.kind === 'Service' ? 'a DNS-1035 label (at most 63 characters, starting with a letter)' : 'a DNS subdomain'} is required`)
    }
    // The object's metadata and its pod template's (a value such as podAnnotations lands there),
    // which the API server validates alike (ValidateObjectMeta, ValidatePodTemplateSpec).
    const template = (o as { spec?: { template?: { metadata?: { labels?: unknown; annotations?: unknown } } } }).spec?.template?.metadata
    for (const [where, meta] of [['', o.metadata], [' (pod template)', template]] as const) {
      if (!meta) continue
      for (const [key, value] of Object.entries((meta.labels ?? {}) as Record<string, unknown>)) {
        if (!isQualifiedName(key)) problems.push(`${id}: invalid label key ${JSON.stringify(key)}${where}`)
        if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value)) problems.push(`${id}: invalid value of label ${JSON.stringify(key)}${where}: ${JSON.stringify(value)}`)
      }
      for (const key of Object.keys((meta.annotations ?? {}) as Record<string, unknown>)) {
        if (!isQualifiedName(key.toLowerCase())) problems.push(`${id}: invalid annotation key ${JSON.stringify(key)}${where}`)
      }
    }
    if (seen.has(id)) problems.push(`${id}: rendered twice`)
    seen.add(id)
  }
  return problems
}
