/**
 * ObjectMeta and LabelSelector validation (apimachinery api/validation, meta/v1/validation): label
 * keys and values, annotation keys and size, selectors, and whether a selector matches labels.
 */
import { isQualifiedName, isValidLabelValue } from '../names.ts'
import type { FieldCause, KubeObject } from '../object.ts'
import { forbiddenField, goJson, goValue, invalid, isObj, q, required, struct } from './field.ts'

/**
 * Keys and label values already found valid: every write checks its labels and annotations, and
 * the same few recur. Bounded (cleared when full); a problem is never remembered.
 */
const validKeys = new Set<string>()
const validLabelValues = new Set<string>()

function remember(set: Set<string>, value: string): void {
  if (set.size >= 10_000) set.clear()
  set.add(value)
}

/** A label or annotation key (`prefix/name`): one cause per IsQualifiedName message, as ValidateLabelName makes them. */
export function keyProblems(field: string, key: string, shown = key): FieldCause[] {
  if (validKeys.has(key)) return []
  const problems = isQualifiedName(key)
  if (problems.length === 0) remember(validKeys, key)
  return problems.map((m) => invalid(field, q(shown), m))
}

/** Labels as ValidateLabels checks them: qualified-name keys, values of ≤ 63 label characters. */
export function validateLabels(field: string, labels: unknown): FieldCause[] {
  const out: FieldCause[] = []
  if (!isObj(labels)) return out
  // Known-good keys and values (nearly all of them) cost a lookup each, and no allocation.
  for (const k in labels) {
    if (!validKeys.has(k)) out.push(...keyProblems(field, k))
    const v = labels[k]
    const value = typeof v === 'string' ? v : String(v)
    if (!validLabelValues.has(value)) out.push(...labelValueProblems(field, value))
  }
  return out
}

export function labelValueProblems(field: string, value: string): FieldCause[] {
  if (validLabelValues.has(value)) return []
  const problems = isValidLabelValue(value)
  if (problems.length === 0) remember(validLabelValues, value)
  return problems.map((m) => invalid(field, q(value), m))
}

/** Annotation keys (checked lower-cased, as ValidateAnnotations does) and their total size. */
export function validateAnnotations(field: string, ann: unknown): FieldCause[] {
  const out: FieldCause[] = []
  if (!isObj(ann)) return out
  let size = 0
  for (const k in ann) {
    const lower = k.toLowerCase()
    if (!validKeys.has(lower)) out.push(...keyProblems(field, lower, k))
    size += k.length + String(ann[k]).length
  }
  if (size > 256 * 1024) out.push({ reason: 'FieldValueTooLong', field, message: `Too long: may not be more than 262144 bytes` })
  return out
}

/** Metadata checks every object gets: label syntax, annotation keys and their total size. */
export function validateMetadata(obj: KubeObject): FieldCause[] {
  return [...validateLabels('metadata.labels', obj.metadata.labels), ...validateAnnotations('metadata.annotations', obj.metadata.annotations)]
}

export function matchLabelsOf(selector: unknown): Record<string, string> | undefined {
  return isObj(selector) && isObj(selector.matchLabels) ? (selector.matchLabels as Record<string, string>) : undefined
}

export function expressionsOf(selector: unknown): Record<string, unknown>[] {
  return isObj(selector) && Array.isArray(selector.matchExpressions) ? selector.matchExpressions.filter(isObj) : []
}

/** Whether a LabelSelector matches labels (an empty selector matches everything). */
export function selectorMatches(selector: Record<string, unknown>, labels: Record<string, unknown>): boolean {
  for (const [k, v] of Object.entries(matchLabelsOf(selector) ?? {})) if (labels[k] !== v) return false
  for (const e of expressionsOf(selector)) {
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

/** A `*metav1.LabelSelector` as Go marshals it (`matchLabels`, `matchExpressions`, both omitempty). */
export function goSelector(sel: unknown): string {
  if (!isObj(sel)) return 'null'
  const out: Record<string, unknown> = {}
  const m = matchLabelsOf(sel)
  if (m && Object.keys(m).length > 0) out.matchLabels = m
  const exprs = expressionsOf(sel).map((e) => {
    const r: Record<string, unknown> = { key: e.key ?? '', operator: e.operator ?? '' }
    if (Array.isArray(e.values) && e.values.length > 0) r.values = e.values
    return struct(r)
  })
  if (exprs.length > 0) out.matchExpressions = exprs
  return goJson(struct(out))
}

/** ValidateLabelSelector (apimachinery meta/v1/validation): matchLabels, then each requirement. */
export function validateLabelSelector(field: string, sel: unknown): FieldCause[] {
  if (!isObj(sel)) return []
  const out = validateLabels(`${field}.matchLabels`, sel.matchLabels)
  expressionsOf(sel).forEach((e, i) => {
    const p = `${field}.matchExpressions[${i}]`
    const values = Array.isArray(e.values) ? e.values : []
    if (e.operator === 'In' || e.operator === 'NotIn') {
      if (values.length === 0) out.push(required(`${p}.values`, "must be specified when `operator` is 'In' or 'NotIn'"))
    } else if (e.operator === 'Exists' || e.operator === 'DoesNotExist') {
      if (values.length > 0) out.push(forbiddenField(`${p}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    } else out.push(invalid(`${p}.operator`, goValue(String(e.operator ?? '')), 'not a valid selector operator'))
    out.push(...keyProblems(`${p}.key`, String(e.key ?? '')))
    values.forEach((v, j) => out.push(...labelValueProblems(`${p}.values[${j}]`, String(v))))
  })
  return out
}

export function isEmptySelector(sel: Record<string, unknown>): boolean {
  return Object.keys(matchLabelsOf(sel) ?? {}).length + expressionsOf(sel).length === 0
}
