/**
 * Validation of built-in objects and of every object's metadata, with the API server's field
 * paths and messages (k8s.io/apimachinery validation, pkg/apis/{apps,core,policy}/validation):
 * the mistakes an operator's templates can make and a real cluster refuses — bad label keys or
 * values, a Deployment selector that does not match its template, a changed selector, a container
 * without an image, a Service without ports.
 */
import { isRbacObject, validateRbac } from './auth/rbac-api.ts'
import type { FieldCause, KubeObject } from './types.ts'

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function invalid(field: string, value: string, detail: string): FieldCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${value}: ${detail}` }
}

function required(field: string): FieldCause {
  return { reason: 'FieldValueRequired', field, message: 'Required value' }
}

/** Go's `%q`-like quoting, which for plain strings is JSON's. */
const q = (s: string): string => JSON.stringify(s)

/** Go's `%#v` of a map[string]string: `map[string]string{"a":"b"}`, keys sorted. */
function goMap(m: Record<string, unknown>): string {
  const keys = Object.keys(m).sort()
  return `map[string]string{${keys.map((k) => `${q(k)}:${q(String(m[k]))}`).join(', ')}}`
}

const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
const qualifiedName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/
const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

const labelValueMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
const namePartMsg =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
const prefixMsg =
  "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

/** A label or annotation key (`prefix/name`), as IsQualifiedName checks it. */
function keyProblems(field: string, key: string): FieldCause[] {
  const out: FieldCause[] = []
  const parts = key.split('/')
  let name = key
  if (parts.length === 2) {
    const prefix = parts[0] ?? ''
    name = parts[1] ?? ''
    if (prefix.length === 0) out.push(invalid(field, q(key), 'prefix part must be non-empty'))
    else if (prefix.length > 253) out.push(invalid(field, q(key), 'prefix part must be no more than 253 characters'))
    else if (!subdomain.test(prefix)) out.push(invalid(field, q(key), prefixMsg))
  } else if (parts.length > 2) {
    return [
      invalid(
        field,
        q(key),
        "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      ),
    ]
  }
  if (name.length === 0) out.push(invalid(field, q(key), 'name part must be non-empty'))
  else if (name.length > 63) out.push(invalid(field, q(key), 'name part must be no more than 63 characters'))
  else if (!qualifiedName.test(name)) out.push(invalid(field, q(key), namePartMsg))
  return out
}

/** Labels as ValidateLabels checks them: qualified-name keys, values of ≤ 63 label characters. */
export function validateLabels(field: string, labels: unknown): FieldCause[] {
  if (!isObj(labels)) return []
  const out: FieldCause[] = []
  for (const [k, v] of Object.entries(labels)) {
    out.push(...keyProblems(field, k))
    const value = typeof v === 'string' ? v : String(v)
    if (value.length > 63) out.push(invalid(field, q(value), 'must be no more than 63 characters'))
    else if (!labelValue.test(value)) out.push(invalid(field, q(value), labelValueMsg))
  }
  return out
}

/** Metadata checks every object gets: label syntax, annotation keys and their total size. */
export function validateMetadata(obj: KubeObject): FieldCause[] {
  const out = validateLabels('metadata.labels', obj.metadata.labels)
  const ann = obj.metadata.annotations
  if (isObj(ann)) {
    let size = 0
    for (const [k, v] of Object.entries(ann)) {
      out.push(...keyProblems('metadata.annotations', k))
      size += k.length + String(v).length
    }
    if (size > 256 * 1024) out.push({ reason: 'FieldValueTooLong', field: 'metadata.annotations', message: `Too long: may not be more than 262144 bytes` })
  }
  return out
}

function matchLabelsOf(selector: unknown): Record<string, string> | undefined {
  return isObj(selector) && isObj(selector.matchLabels) ? (selector.matchLabels as Record<string, string>) : undefined
}

function selectorMatches(selector: Record<string, unknown>, labels: Record<string, unknown>): boolean {
  for (const [k, v] of Object.entries(matchLabelsOf(selector) ?? {})) if (labels[k] !== v) return false
  const exprs = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : []
  for (const e of exprs) {
    if (!isObj(e)) continue
    const key = String(e.key ?? '')
    const values = Array.isArray(e.values) ? e.values.map(String) : []
    const has = Object.hasOwn(labels, key)
    const v = has ? String(labels[key]) : undefined
    if (e.operator === 'In' && (v === undefined || !values.includes(v))) return false
    if (e.operator === 'NotIn' && v !== undefined && values.includes(v)) return false
    if (e.operator === 'Exists' && !has) return false
    if (e.operator === 'DoesNotExist' && has) return false
  }
  return true
}

/** Go's `%#v` of a metav1.LabelSelector, for immutability messages. */
function goSelector(sel: unknown): string {
  const m = matchLabelsOf(sel)
  const exprs = isObj(sel) && Array.isArray(sel.matchExpressions) && sel.matchExpressions.length > 0 ? `[]v1.LabelSelectorRequirement{...}` : '[]v1.LabelSelectorRequirement(nil)'
  return `v1.LabelSelector{MatchLabels:${m ? goMap(m) : 'map[string]string(nil)'}, MatchExpressions:${exprs}}`
}

function validatePodSpec(field: string, spec: unknown): FieldCause[] {
  if (!isObj(spec)) return [required(`${field}.containers`)]
  const out: FieldCause[] = []
  const containers = Array.isArray(spec.containers) ? spec.containers : []
  if (containers.length === 0) out.push(required(`${field}.containers`))
  const seen = new Set<string>()
  containers.forEach((c, i) => {
    const p = `${field}.containers[${i}]`
    if (!isObj(c)) return
    const name = typeof c.name === 'string' ? c.name : ''
    if (name === '') out.push(required(`${p}.name`))
    else if (seen.has(name)) out.push({ reason: 'FieldValueDuplicate', field: `${p}.name`, message: `Duplicate value: ${q(name)}` })
    seen.add(name)
    if (typeof c.image !== 'string' || c.image.trim() === '') out.push(required(`${p}.image`))
    const ports = Array.isArray(c.ports) ? c.ports : []
    ports.forEach((port, j) => {
      if (!isObj(port)) return
      const n = port.containerPort
      if (typeof n !== 'number' || n < 1 || n > 65535) out.push(invalid(`${p}.ports[${j}].containerPort`, String(n ?? 0), 'must be between 1 and 65535, inclusive'))
    })
  })
  return out
}

function validateReplicated(obj: KubeObject, old: KubeObject | undefined, kind: string): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  const out: FieldCause[] = []
  if (typeof spec.replicas === 'number' && spec.replicas < 0) out.push(invalid('spec.replicas', String(spec.replicas), 'must be greater than or equal to 0'))
  const selector = spec.selector
  const template = isObj(spec.template) ? spec.template : {}
  const tmeta = isObj(template.metadata) ? template.metadata : {}
  const labels = isObj(tmeta.labels) ? tmeta.labels : {}
  if (!isObj(selector)) out.push(required('spec.selector'))
  else if (Object.keys(matchLabelsOf(selector) ?? {}).length === 0 && !(Array.isArray(selector.matchExpressions) && selector.matchExpressions.length > 0)) {
    out.push(invalid('spec.selector', goSelector(selector), `empty selector is invalid for ${kind}`))
  } else {
    out.push(...validateLabels('spec.selector.matchLabels', selector.matchLabels))
    if (!selectorMatches(selector, labels)) out.push(invalid('spec.template.metadata.labels', goMap(labels), '`selector` does not match template `labels`'))
  }
  out.push(...validateLabels('spec.template.metadata.labels', labels))
  out.push(...validatePodSpec('spec.template.spec', template.spec))
  const oldSelector = old && isObj(old.spec) ? old.spec.selector : undefined
  if (old && isObj(selector) && oldSelector !== undefined && JSON.stringify(sortKeys(oldSelector)) !== JSON.stringify(sortKeys(selector))) {
    out.push(invalid('spec.selector', goSelector(selector), 'field is immutable'))
  }
  return out
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys)
  if (!isObj(v)) return v
  return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]))
}

function validateService(obj: KubeObject): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  const out: FieldCause[] = []
  const ports = Array.isArray(spec.ports) ? spec.ports : []
  const headless = spec.clusterIP === 'None'
  if (ports.length === 0 && !headless && spec.type !== 'ExternalName') out.push(required('spec.ports'))
  const names = new Set<string>()
  ports.forEach((p, i) => {
    if (!isObj(p)) return
    const n = p.port
    if (typeof n !== 'number' || n < 1 || n > 65535) out.push(invalid(`spec.ports[${i}].port`, String(n ?? 0), 'must be between 1 and 65535, inclusive'))
    if (ports.length > 1 && (typeof p.name !== 'string' || p.name === '')) out.push(required(`spec.ports[${i}].name`))
    if (typeof p.name === 'string' && p.name !== '') {
      if (names.has(p.name)) out.push({ reason: 'FieldValueDuplicate', field: `spec.ports[${i}].name`, message: `Duplicate value: ${q(p.name)}` })
      names.add(p.name)
    }
  })
  return out
}

function validatePDB(obj: KubeObject): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined) {
    return [invalid('spec', `policy.PodDisruptionBudgetSpec{...}`, 'minAvailable and maxUnavailable cannot be both set')]
  }
  return []
}

/**
 * Events (pkg/apis/core/validation/events.go): the involved object's namespace must be the
 * event's; an events.k8s.io/v1 Event also needs eventTime, reportingController,
 * reportingInstance, action and reason, a type of Normal or Warning, and none of the legacy
 * fields. Paths are those of the internal type the server validates (`involvedObject`, `message`).
 */
function validateEvent(obj: KubeObject, newApi: boolean): FieldCause[] {
  const o = obj as Record<string, unknown>
  const out: FieldCause[] = []
  const involved = isObj(newApi ? o.regarding : o.involvedObject) ? ((newApi ? o.regarding : o.involvedObject) as Record<string, unknown>) : {}
  const ns = obj.metadata.namespace ?? ''
  const ins = typeof involved.namespace === 'string' ? involved.namespace : ''
  if (ins === '' ? ns !== '' && ns !== 'default' : ns !== ins) out.push(invalid('involvedObject.namespace', q(ins), 'does not match event.namespace'))
  if (!newApi) return out
  const str = (k: string): string => (typeof o[k] === 'string' ? (o[k] as string) : '')
  if (str('eventTime') === '') out.push(required('eventTime'))
  if (str('type') !== 'Normal' && str('type') !== 'Warning') out.push(invalid('type', '""', `has invalid value: ${str('type')}`))
  if (str('deprecatedFirstTimestamp') !== '') out.push(invalid('firstTimestamp', '""', 'needs to be unset'))
  if (str('deprecatedLastTimestamp') !== '') out.push(invalid('lastTimestamp', '""', 'needs to be unset'))
  if (typeof o.deprecatedCount === 'number' && o.deprecatedCount !== 0) out.push(invalid('count', '""', 'needs to be unset'))
  if (isObj(o.deprecatedSource) && (o.deprecatedSource.component || o.deprecatedSource.host)) out.push(invalid('source', '""', 'needs to be unset'))
  const limits: [string, string, number][] = [
    ['reportingController', 'reportingController', 0],
    ['reportingInstance', 'reportingInstance', 128],
    ['action', 'action', 128],
    ['reason', 'reason', 128],
  ]
  for (const [key, field, limit] of limits) {
    const v = str(key)
    if (v === '') out.push(required(field))
    else if (limit > 0 && v.length > limit) out.push(invalid(field, '""', `can have at most ${limit} characters`))
  }
  if (str('reportingController') !== '') out.push(...keyProblems('reportingController', str('reportingController')))
  if (str('note').length > 1024) out.push(invalid('message', '""', 'can have at most 1024 characters'))
  return out
}

/**
 * Validates an object of a built-in kind on create (`old` undefined) or update. Custom resources
 * get {@link validateMetadata} only; their schema validation is the CRD's.
 */
export function validateBuiltin(obj: KubeObject, old: KubeObject | undefined): FieldCause[] {
  const out = validateMetadata(obj)
  switch (`${obj.apiVersion}/${obj.kind}`) {
    case 'apps/v1/Deployment':
      out.push(...validateReplicated(obj, old, 'deployment'))
      break
    case 'apps/v1/ReplicaSet':
      out.push(...validateReplicated(obj, old, 'replicaset'))
      break
    case 'v1/Pod':
      out.push(...validatePodSpec('spec', obj.spec))
      break
    case 'v1/Service':
      out.push(...validateService(obj))
      break
    case 'policy/v1/PodDisruptionBudget':
      out.push(...validatePDB(obj))
      break
    case 'v1/Event':
      out.push(...validateEvent(obj, false))
      break
    case 'events.k8s.io/v1/Event':
      out.push(...validateEvent(obj, true))
      break
    default:
      if (isRbacObject(obj)) out.push(...validateRbac(obj, old))
      break
  }
  return out
}
