/**
 * The RBAC authorizer of kube-apiserver (`plugin/pkg/auth/authorizer/rbac/rbac.go` and
 * `pkg/apis/rbac/v1/evaluation_helpers.go`), reading Roles, ClusterRoles and their bindings from
 * the sandbox's store, behind the privileged-group authorizer that lets `system:masters` do
 * anything. It answers allow or no-opinion (RBAC never denies), with the reason the real one
 * gives: which binding allowed, or the bindings whose role is missing.
 */
import { parseLabelSelector, formatLabelSelector, SelectorError, type Selector } from '../../kube/labels.ts'
import type { Store } from '../store.ts'
import type { KubeObject } from '../types.ts'
import { privilegedGroup, splitServiceAccountUsername, type UserInfo } from './user.ts'

/** A PolicyRule of a Role or ClusterRole. */
export interface PolicyRule {
  apiGroups?: string[]
  resources?: string[]
  resourceNames?: string[]
  nonResourceURLs?: string[]
  verbs: string[]
}

/** What the authorizer is asked about a request (k8s.io/apiserver `authorizer.Attributes`). */
export interface Attributes {
  user: UserInfo
  verb: string
  /** false for non-resource URLs (`/api`, `/healthz`, …) */
  resourceRequest: boolean
  group?: string
  version?: string
  resource?: string
  subresource?: string
  namespace?: string
  name?: string
  /** the URL path of a non-resource request */
  path?: string
}

/** The outcome: allowed or not, and the authorizer's reason. */
export interface Decision {
  allowed: boolean
  reason: string
}

interface Subject {
  kind?: string
  name?: string
  namespace?: string
}
interface RoleRef {
  kind?: string
  name?: string
}

const rbacGroup = 'rbac.authorization.k8s.io'
const tables = { roles: `${rbacGroup}/roles`, clusterRoles: `${rbacGroup}/clusterroles`, roleBindings: `${rbacGroup}/rolebindings`, clusterRoleBindings: `${rbacGroup}/clusterrolebindings` }

/** `RuleAllows`: verbs, API group, resource (a `*` prefix before `/sub` too), resource names; or the non-resource URL. */
export function ruleAllows(a: Attributes, rule: PolicyRule): boolean {
  const verbs = rule.verbs ?? []
  if (!verbs.includes('*') && !verbs.includes(a.verb)) return false
  if (!a.resourceRequest) {
    const path = a.path ?? ''
    return (rule.nonResourceURLs ?? []).some((u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.replace(/\*+$/, ''))))
  }
  const groups = rule.apiGroups ?? []
  if (!groups.includes('*') && !groups.includes(a.group ?? '')) return false
  const sub = a.subresource ?? ''
  const combined = sub ? `${a.resource ?? ''}/${sub}` : (a.resource ?? '')
  const resourceOk = (rule.resources ?? []).some((r) => r === '*' || r === combined || (sub !== '' && r === `*/${sub}`))
  if (!resourceOk) return false
  const names = rule.resourceNames ?? []
  return names.length === 0 || names.includes(a.name ?? '')
}

function appliesTo(user: UserInfo, subjects: unknown, namespace: string): Subject | undefined {
  if (!Array.isArray(subjects)) return undefined
  for (const s of subjects as Subject[]) {
    if (s.kind === 'User' && s.name === user.username) return s
    if (s.kind === 'Group' && s.name !== undefined && user.groups.includes(s.name)) return s
    if (s.kind === 'ServiceAccount') {
      // A subject without namespace means the binding's own (RoleBindings only).
      const ns = s.namespace || namespace
      const sa = splitServiceAccountUsername(user.username)
      if (ns !== '' && sa && sa.namespace === ns && sa.name === s.name) return s
    }
  }
  return undefined
}

function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === 'ServiceAccount') return `${s.kind} ${JSON.stringify(`${s.name ?? ''}/${s.namespace || bindingNamespace}`)}`
  return `${s.kind ?? ''} ${JSON.stringify(s.name ?? '')}`
}

/** utilerrors.NewAggregate's message: one error as is, several as `[a, b]` (duplicates once). */
export function aggregateMessage(errors: string[]): string {
  const unique = [...new Set(errors)]
  return unique.length === 1 ? (unique[0] ?? '') : `[${unique.join(', ')}]`
}

/** Rules of a binding's role, as the source that grants them, for visiting. */
type Visitor = (source: string, rule: PolicyRule | undefined, error: string | undefined) => boolean

/** RBAC over the objects of a sandbox's store. */
export class RbacAuthorizer {
  #store: Store

  constructor(store: Store) {
    this.#store = store
  }

  #rulesOf(ref: RoleRef, bindingNamespace: string): PolicyRule[] | string {
    if (ref.kind === 'ClusterRole') {
      const role = this.#store.get(tables.clusterRoles, '', ref.name ?? '')
      if (!role) return `clusterrole.rbac.authorization.k8s.io ${JSON.stringify(ref.name ?? '')} not found`
      return ((role.obj as { rules?: PolicyRule[] | null }).rules ?? []) as PolicyRule[]
    }
    if (ref.kind === 'Role' && bindingNamespace !== '') {
      const role = this.#store.get(tables.roles, bindingNamespace, ref.name ?? '')
      if (!role) return `role.rbac.authorization.k8s.io ${JSON.stringify(ref.name ?? '')} not found`
      return ((role.obj as { rules?: PolicyRule[] | null }).rules ?? []) as PolicyRule[]
    }
    return `unsupported role reference kind: ${JSON.stringify(ref.kind ?? '')}`
  }

  /** `VisitRulesFor`: ClusterRoleBindings, then the RoleBindings of the namespace; stops when the visitor says so. */
  #visit(user: UserInfo, namespace: string, visitor: Visitor): void {
    for (const b of this.#store.list(tables.clusterRoleBindings)) {
      const binding = b.obj as KubeObject & { roleRef?: RoleRef; subjects?: unknown }
      const subject = appliesTo(user, binding.subjects, '')
      if (!subject) continue
      const ref = binding.roleRef ?? {}
      const rules = this.#rulesOf(ref, '')
      const source = `ClusterRoleBinding ${JSON.stringify(b.name)} of ${ref.kind ?? ''} ${JSON.stringify(ref.name ?? '')} to ${describeSubject(subject, '')}`
      if (typeof rules === 'string') {
        if (!visitor(source, undefined, rules)) return
        continue
      }
      for (const rule of rules) if (!visitor(source, rule, undefined)) return
    }
    if (namespace === '') return
    for (const b of this.#store.list(tables.roleBindings, namespace)) {
      const binding = b.obj as KubeObject & { roleRef?: RoleRef; subjects?: unknown }
      const subject = appliesTo(user, binding.subjects, namespace)
      if (!subject) continue
      const ref = binding.roleRef ?? {}
      const rules = this.#rulesOf(ref, namespace)
      const source = `RoleBinding ${JSON.stringify(`${b.name}/${namespace}`)} of ${ref.kind ?? ''} ${JSON.stringify(ref.name ?? '')} to ${describeSubject(subject, namespace)}`
      if (typeof rules === 'string') {
        if (!visitor(source, undefined, rules)) return
        continue
      }
      for (const rule of rules) if (!visitor(source, rule, undefined)) return
    }
  }

  /** The decision of the privileged-group authorizer, then RBAC. */
  authorize(a: Attributes): Decision {
    if (a.user.groups.includes(privilegedGroup)) return { allowed: true, reason: '' }
    let allowed = ''
    const errors: string[] = []
    this.#visit(a.user, a.resourceRequest ? (a.namespace ?? '') : '', (source, rule, error) => {
      if (rule && ruleAllows(a, rule)) {
        allowed = `RBAC: allowed by ${source}`
        return false
      }
      if (error) errors.push(error)
      return true
    })
    if (allowed) return { allowed: true, reason: allowed }
    return { allowed: false, reason: errors.length > 0 ? `RBAC: ${aggregateMessage(errors)}` : '' }
  }

  /** `RulesFor`: every rule that applies to the user in a namespace, and the errors met on the way. */
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[] } {
    const rules: PolicyRule[] = []
    const errors: string[] = []
    this.#visit(user, namespace, (_source, rule, error) => {
      if (rule) rules.push(rule)
      if (error) errors.push(error)
      return true
    })
    return { rules, errors }
  }
}

/** ClusterRoles whose labels one of the aggregation rule's selectors matches, by name, without `self`. */
function aggregated(self: KubeObject, all: readonly KubeObject[]): PolicyRule[] {
  let selectors: Selector[]
  try {
    selectors = ((self.aggregationRule as { clusterRoleSelectors?: unknown[] } | undefined)?.clusterRoleSelectors ?? []).map((s) => parseLabelSelector(formatLabelSelector(s)))
  } catch (e) {
    // The aggregation controller's LabelSelectorAsSelector fails, and the role's sync with it.
    if (e instanceof SelectorError) return []
    throw e
  }
  const out: PolicyRule[] = []
  const seen = new Set<string>()
  for (const selector of selectors) {
    const matching = all.filter((r) => selector.matches(r.metadata.labels ?? {})).sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1))
    for (const role of matching) {
      if (role.metadata.name === self.metadata.name) continue
      for (const rule of ((role as { rules?: PolicyRule[] | null }).rules ?? []) as PolicyRule[]) {
        const key = JSON.stringify(rule)
        if (seen.has(key)) continue
        seen.add(key)
        out.push(rule)
      }
    }
  }
  return out
}

/**
 * The clusterrole-aggregation controller's computation: for a ClusterRole with an
 * `aggregationRule`, the rules of the ClusterRoles its selectors match (sorted by name, each rule
 * once); undefined when the role does not aggregate or already has exactly those rules.
 */
export function aggregatedRules(role: KubeObject, all: readonly KubeObject[]): PolicyRule[] | undefined {
  if (!role.aggregationRule) return undefined
  const rules = aggregated(role, all)
  const current = ((role as { rules?: PolicyRule[] | null }).rules ?? []) as PolicyRule[]
  return JSON.stringify(rules) === JSON.stringify(current) ? undefined : rules
}
