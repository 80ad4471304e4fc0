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

/**
 * Objects with selectors (Services, PodDisruptionBudgets) indexed by the label pairs they require,
 * so that a pod's change finds the few whose selector may match it without scanning its namespace.
 * Selectors that require no pair (only expressions, or empty) are candidates for every pod.
 */
export class SelectorIndex {
  #byPair = new Map<string, Set<string>>()
  #open = new Map<string, Set<string>>()
  #entries = new Map<string, { namespace: string; pairs: string[] }>()

  /** Indexes (or re-indexes) `key` in `namespace` under the pairs of `required` (empty: every pod). */
  set(key: string, namespace: string, required: Record<string, string>): void {
    this.delete(key)
    const pairs = Object.entries(required).map(([k, v]) => `${namespace}\n${k}=${v}`)
    this.#entries.set(key, { namespace, pairs })
    if (pairs.length === 0) add(this.#open, namespace, key)
    // One pair is enough to be found: every pod the selector matches carries all of them.
    else add(this.#byPair, pairs[0] as string, key)
  }

  /** Removes `key`. */
  delete(key: string): void {
    const e = this.#entries.get(key)
    if (!e) return
    this.#entries.delete(key)
    if (e.pairs.length === 0) remove(this.#open, e.namespace, key)
    else remove(this.#byPair, e.pairs[0] as string, key)
  }

  /** Keys whose selector may match an object with these labels in this namespace. */
  candidates(namespace: string, labels: Labels): string[] {
    const out = [...(this.#open.get(namespace) ?? [])]
    for (const [k, v] of Object.entries(labels ?? {})) for (const key of this.#byPair.get(`${namespace}\n${k}=${v}`) ?? []) out.push(key)
    return out
  }
}

function add(m: Map<string, Set<string>>, k: string, v: string): void {
  let s = m.get(k)
  if (!s) m.set(k, (s = new Set()))
  s.add(v)
}

function remove(m: Map<string, Set<string>>, k: string, v: string): void {
  const s = m.get(k)
  s?.delete(v)
  if (s?.size === 0) m.delete(k)
}
