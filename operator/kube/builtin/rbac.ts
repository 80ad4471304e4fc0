/**
 * What the API server does to rbac.authorization.k8s.io/v1 objects on write: defaulting
 * (`pkg/apis/rbac/v1/defaults.go`) and validation (`pkg/apis/rbac/validation/validation.go`),
 * with the real field paths and messages. The escalation check (a user may only grant what it
 * holds) is not modelled.
 */
import type { FieldCause, KubeObject } from '../object.ts'

const rbacGroup = 'rbac.authorization.k8s.io'
type Obj = Record<string, unknown>
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const str = (v: unknown): string => (typeof v === 'string' ? v : '')
const goStrings = (v: unknown): string => `[]string{${list(v).map((x) => JSON.stringify(String(x))).join(', ')}}`

/** Whether an object is one of the four RBAC kinds. */
export function isRbacObject(obj: KubeObject): boolean {
  return obj.apiVersion === `${rbacGroup}/v1` && ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'].includes(obj.kind)
}

/** `path.IsValidPathSegmentName`: the name rule of RBAC objects (`system:basic-user` is valid). */
export function rbacNameProblem(name: string): string | undefined {
  if (name === '.' || name === '..') return `may not be '${name}'`
  if (name.includes('/')) return "may not contain '/'"
  if (name.includes('%')) return "may not contain '%'"
  return undefined
}

/** Defaults: a binding's `roleRef.apiGroup`, and each subject's `apiGroup` by kind. */
export function defaultRbac(obj: KubeObject): void {
  if (obj.kind !== 'RoleBinding' && obj.kind !== 'ClusterRoleBinding') return
  if (isObject(obj.roleRef) && !obj.roleRef.apiGroup) obj.roleRef.apiGroup = rbacGroup
  for (const s of list(obj.subjects)) {
    if (!isObject(s) || s.apiGroup) continue
    if (s.kind === 'User' || s.kind === 'Group') s.apiGroup = rbacGroup
    else if (s.kind === 'ServiceAccount') s.apiGroup = ''
  }
}

const notSupported = (field: string, value: string, supported: string[]): FieldCause => ({
  reason: 'FieldValueNotSupported',
  field,
  message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
})
const required = (field: string, detail = ''): FieldCause => ({ reason: 'FieldValueRequired', field, message: detail ? `Required value: ${detail}` : 'Required value' })

function validateRules(rules: unknown, namespaced: boolean): FieldCause[] {
  const out: FieldCause[] = []
  list(rules).forEach((raw, i) => {
    const rule = isObject(raw) ? raw : {}
    const at = `rules[${i}]`
    if (list(rule.verbs).length === 0) out.push(required(`${at}.verbs`, 'verbs must contain at least one value'))
    if (list(rule.nonResourceURLs).length > 0) {
      const v = goStrings(rule.nonResourceURLs)
      if (namespaced) out.push({ reason: 'FieldValueInvalid', field: `${at}.nonResourceURLs`, message: `Invalid value: ${v}: namespaced rules cannot apply to non-resource URLs` })
      if (list(rule.apiGroups).length > 0 || list(rule.resources).length > 0 || list(rule.resourceNames).length > 0)
        out.push({ reason: 'FieldValueInvalid', field: `${at}.nonResourceURLs`, message: `Invalid value: ${v}: rules cannot apply to both regular resources and non-resource URLs` })
      return
    }
    if (list(rule.apiGroups).length === 0) out.push(required(`${at}.apiGroups`, 'resource rules must supply at least one api group'))
    if (list(rule.resources).length === 0) out.push(required(`${at}.resources`, 'resource rules must supply at least one resource'))
  })
  return out
}

function roleRefText(ref: Obj): string {
  return `rbac.RoleRef{APIGroup:${JSON.stringify(str(ref.apiGroup))}, Kind:${JSON.stringify(str(ref.kind))}, Name:${JSON.stringify(str(ref.name))}}`
}

function validateBinding(obj: KubeObject, old: KubeObject | undefined, namespaced: boolean): FieldCause[] {
  const out: FieldCause[] = []
  const ref = isObject(obj.roleRef) ? obj.roleRef : {}
  if (str(ref.apiGroup) !== rbacGroup) out.push(notSupported('roleRef.apiGroup', str(ref.apiGroup), [rbacGroup]))
  const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole']
  if (!kinds.includes(str(ref.kind))) out.push(notSupported('roleRef.kind', str(ref.kind), kinds))
  const name = str(ref.name)
  if (name === '') out.push(required('roleRef.name'))
  else {
    const problem = rbacNameProblem(name)
    if (problem) out.push({ reason: 'FieldValueInvalid', field: 'roleRef.name', message: `Invalid value: ${JSON.stringify(name)}: ${problem}` })
  }
  list(obj.subjects).forEach((raw, i) => {
    const s = isObject(raw) ? raw : {}
    const at = `subjects[${i}]`
    if (str(s.name) === '') out.push(required(`${at}.name`))
    const kind = str(s.kind)
    if (kind === 'ServiceAccount') {
      if (str(s.apiGroup) !== '') out.push(notSupported(`${at}.apiGroup`, str(s.apiGroup), ['']))
      if (!namespaced && str(s.namespace) === '') out.push(required(`${at}.namespace`))
    } else if (kind === 'User' || kind === 'Group') {
      if (str(s.apiGroup) !== rbacGroup) out.push(notSupported(`${at}.apiGroup`, str(s.apiGroup), [rbacGroup]))
    } else out.push(notSupported(`${at}.kind`, kind, ['ServiceAccount', 'User', 'Group']))
  })
  if (old) {
    const before = isObject(old.roleRef) ? old.roleRef : {}
    if (str(before.apiGroup) !== str(ref.apiGroup) || str(before.kind) !== str(ref.kind) || str(before.name) !== str(ref.name))
      out.push({ reason: 'FieldValueInvalid', field: 'roleRef', message: `Invalid value: ${roleRefText(ref)}: cannot change roleRef` })
  }
  return out
}

/** Validation of an RBAC object (`old` on update): rules, aggregation selectors, roleRef, subjects. */
export function validateRbac(obj: KubeObject, old: KubeObject | undefined): FieldCause[] {
  switch (obj.kind) {
    case 'Role':
      return validateRules(obj.rules, true)
    case 'ClusterRole': {
      const out = validateRules(obj.rules, false)
      if (obj.aggregationRule !== undefined && obj.aggregationRule !== null) {
        const selectors = list(isObject(obj.aggregationRule) ? obj.aggregationRule.clusterRoleSelectors : undefined)
        if (selectors.length === 0) out.push(required('aggregationRule.clusterRoleSelectors', 'at least one clusterRoleSelector required if aggregationRule is non-nil'))
      }
      return out
    }
    case 'RoleBinding':
      return validateBinding(obj, old, true)
    case 'ClusterRoleBinding':
      return validateBinding(obj, old, false)
    default:
      return []
  }
}
