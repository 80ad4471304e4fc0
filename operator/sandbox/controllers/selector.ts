/** Label selectors as the controllers evaluate them against their caches. */
import type { JsonObject } from '../types.ts'

type Labels = Record<string, string> | undefined

/**
 * metav1.LabelSelectorAsSelector, evaluated: a missing selector matches nothing, an empty one
 * everything; `matchLabels` and every `matchExpressions` requirement must hold.
 */
export function labelSelectorMatcher(sel: unknown): (labels: Labels) => boolean {
  if (sel === null || typeof sel !== 'object' || Array.isArray(sel)) return () => false
  const s = sel as JsonObject
  const matchLabels = Object.entries((s['matchLabels'] ?? {}) as Record<string, string>)
  const exprs = (Array.isArray(s['matchExpressions']) ? s['matchExpressions'] : []) as { key?: string; operator?: string; values?: string[] }[]
  return (labels) => {
    const l = labels ?? {}
    for (const [k, v] of matchLabels) if (l[k] !== v) return false
    for (const e of exprs) {
      const key = e.key ?? ''
      const has = Object.hasOwn(l, key)
      const values = e.values ?? []
      if (e.operator === 'In' && !(has && values.includes(l[key] ?? ''))) return false
      if (e.operator === 'NotIn' && has && values.includes(l[key] ?? '')) return false
      if (e.operator === 'Exists' && !has) return false
      if (e.operator === 'DoesNotExist' && has) return false
    }
    return true
  }
}

/** A Service's `spec.selector` (a plain map): every pair must be among the labels. */
export function mapSelectorMatches(selector: Record<string, string>, labels: Labels): boolean {
  const l = labels ?? {}
  for (const [k, v] of Object.entries(selector)) if (l[k] !== v) return false
  return true
}
