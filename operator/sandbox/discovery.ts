/**
 * Legacy (non-aggregated) discovery documents: `/version`, `/api`, `/api/v1`, `/apis`,
 * `/apis/<group>`, `/apis/<group>/<version>`. Clients that ask for aggregated discovery
 * (kubectl ≥ 1.26) read the `Content-Type` of the answer and fall back to these.
 */
import type { Registry } from './registry.ts'
import { groupVersion } from './registry.ts'
import type { ResourceType } from './types.ts'

/** `/version`. */
export function versionInfo(): Record<string, string> {
  return {
    major: '1',
    minor: '34',
    emulationMajor: '1',
    emulationMinor: '34',
    minCompatibilityMajor: '1',
    minCompatibilityMinor: '33',
    gitVersion: 'v1.34.0-sandbox',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.24.0',
    compiler: 'gc',
    platform: `${process.platform === 'win32' ? 'windows' : process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
  }
}

/** `/api`. */
export function apiVersions(serverAddress: string): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] }
}

/**
 * Kubernetes version priority (`v1` > `v1beta2` > `v1beta1` > `v1alpha1` > other), as
 * apimachinery's `CompareKubeAwareVersionStrings`; negative when `a` comes first.
 */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string): [number, number, number] | undefined => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v)
    if (!m) return undefined
    const stage = m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1
    return [stage, Number(m[1]), Number(m[3] ?? 0)]
  }
  const pa = parse(a)
  const pb = parse(b)
  if (!pa || !pb) return pa ? -1 : pb ? 1 : a < b ? -1 : a > b ? 1 : 0
  if (pa[0] !== pb[0]) return pb[0] - pa[0]
  if (pa[1] !== pb[1]) return pb[1] - pa[1]
  return pb[2] - pa[2]
}

function groupEntry(group: string, versions: string[]): Record<string, unknown> {
  const sorted = [...versions].sort(compareVersions)
  const list = sorted.map((v) => ({ groupVersion: groupVersion(group, v), version: v }))
  return { name: group, versions: list, preferredVersion: list[0] }
}

/** `/apis`: every named group. */
export function apiGroupList(registry: Registry): Record<string, unknown> {
  const groups = registry
    .groups()
    .filter((g) => g.group !== '')
    .map((g) => groupEntry(g.group, g.versions.map((v) => v.version)))
  return { kind: 'APIGroupList', apiVersion: 'v1', groups }
}

/** `/apis/<group>`, or undefined when the group is not served. */
export function apiGroup(registry: Registry, group: string): Record<string, unknown> | undefined {
  const g = registry.groups().find((x) => x.group === group && group !== '')
  if (!g) return undefined
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(g.group, g.versions.map((v) => v.version)) }
}

function resourceEntries(t: ResourceType): Record<string, unknown>[] {
  const main: Record<string, unknown> = { name: t.resource, singularName: t.singular, namespaced: t.namespaced, kind: t.kind, verbs: t.verbs }
  if (t.shortNames && t.shortNames.length > 0) main.shortNames = t.shortNames
  if (t.categories && t.categories.length > 0) main.categories = t.categories
  const out = [main]
  if (t.subresources.status) out.push({ name: `${t.resource}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] })
  if (t.group === '' && t.resource === 'pods') out.push({ name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] })
  if (t.subresources.resize) out.push({ name: `${t.resource}/resize`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] })
  if (t.group === '' && t.resource === 'serviceaccounts') out.push({ name: 'serviceaccounts/token', singularName: '', namespaced: true, group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] })
  if (t.subresources.scale) out.push({ name: `${t.resource}/scale`, singularName: '', namespaced: t.namespaced, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] })
  return out
}

/** `/api/v1` or `/apis/<group>/<version>`, or undefined when not served. */
export function apiResourceList(registry: Registry, group: string, version: string): Record<string, unknown> | undefined {
  const g = registry.groups().find((x) => x.group === group)
  const v = g?.versions.find((x) => x.version === version)
  if (!v) return undefined
  const resources = [...v.types].sort((a, b) => (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0)).flatMap(resourceEntries)
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: groupVersion(group, version), resources }
}

