/**
 * What the deploy tests read from kustomize/: the objects a kustomization builds (with real
 * kustomize, `kubectl kustomize`), and the RBAC they grant to the operator's ServiceAccount,
 * evaluated the way the Kubernetes RBAC authorizer does.
 */
import { execFileSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import type { KubeObject } from '../operator/controller/client.ts'
import { kubectlPath } from './support/tools.ts'
import type { PolicyRule } from '../operator/sandbox/auth/rbac.ts'

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The YAML `kubectl kustomize kustomize/<dir>` prints. */
export function kustomizeText(dir: string): string {
  return execFileSync(kubectlPath(), ['kustomize', join(ROOT, 'kustomize', dir)], { encoding: 'utf8' })
}

/** The objects of `kubectl kustomize kustomize/<dir>`. */
export function kustomize(dir: string): KubeObject[] {
  return parseAllDocuments(kustomizeText(dir)).map((d) => {
    if (d.errors.length > 0) throw new Error(String(d.errors[0]))
    return d.toJS() as KubeObject
  })
}

/** A rule of a Role or ClusterRole (the sandbox's RBAC type). */
export type { PolicyRule }

/** Rules granted to a ServiceAccount, and where: cluster-wide, or in one namespace. */
export interface Grant {
  /** undefined: every namespace and cluster-scoped requests (a ClusterRole through a ClusterRoleBinding). */
  namespace: string | undefined
  /** `ClusterRole/name` or `Role/ns/name`, for messages. */
  from: string
  rule: PolicyRule
}

type Binding = KubeObject & { roleRef: { kind: string; name: string }; subjects?: { kind: string; name: string; namespace?: string }[] }
type RoleObject = KubeObject & { rules?: PolicyRule[] }

/** Every rule bound to ServiceAccount `namespace/name` by the (Cluster)RoleBindings among `objects`. */
export function grantsFor(objects: KubeObject[], namespace: string, name: string): Grant[] {
  const roles = objects.filter((o): o is RoleObject => o.apiVersion === 'rbac.authorization.k8s.io/v1' && (o.kind === 'Role' || o.kind === 'ClusterRole'))
  const bindings = objects.filter((o): o is Binding => o.apiVersion === 'rbac.authorization.k8s.io/v1' && (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding'))
  const grants: Grant[] = []
  for (const b of bindings) {
    if (!(b.subjects ?? []).some((s) => s.kind === 'ServiceAccount' && s.name === name && s.namespace === namespace)) continue
    const bindingNs = b.kind === 'RoleBinding' ? b.metadata.namespace : undefined
    // A RoleBinding may refer to a Role in its namespace or to a ClusterRole; either way it grants only in its namespace.
    const role = roles.find((r) => r.kind === b.roleRef.kind && r.metadata.name === b.roleRef.name && (r.kind === 'ClusterRole' || r.metadata.namespace === bindingNs))
    if (!role) throw new Error(`${b.kind} ${b.metadata.name} refers to a missing ${b.roleRef.kind} ${b.roleRef.name}`)
    const from = role.kind === 'Role' ? `Role/${role.metadata.namespace}/${role.metadata.name}` : `ClusterRole/${role.metadata.name}`
    for (const rule of role.rules ?? []) grants.push({ namespace: bindingNs, from, rule })
  }
  return grants
}

/** A resource request as the API server's authorizer sees it. */
export interface Attributes {
  verb: string
  group: string
  resource: string
  subresource?: string
  /** undefined for a cluster-scoped request or a request across all namespaces. */
  namespace?: string
  name?: string
}

/** Whether one rule matches a resource request (no wildcards: the manifests use none, a test checks). */
export function ruleMatches(rule: PolicyRule, a: Attributes): boolean {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource
  if (!(rule.apiGroups ?? []).includes(a.group)) return false
  if (!(rule.resources ?? []).includes(resource)) return false
  if (!rule.verbs.includes(a.verb)) return false
  if (rule.resourceNames && rule.resourceNames.length > 0) return a.name !== undefined && rule.resourceNames.includes(a.name)
  return true
}

/** The grants that allow a request (a namespaced grant only in its namespace). */
export function allowing(grants: Grant[], a: Attributes): Grant[] {
  return grants.filter((g) => (g.namespace === undefined || g.namespace === a.namespace) && ruleMatches(g.rule, a))
}

/** Each (verb, group, resource) a grant names, one per combination. */
export function expand(g: Grant): { verb: string; group: string; resource: string }[] {
  const out: { verb: string; group: string; resource: string }[] = []
  for (const group of g.rule.apiGroups ?? []) for (const resource of g.rule.resources ?? []) for (const verb of g.rule.verbs) out.push({ verb, group, resource })
  return out
}
