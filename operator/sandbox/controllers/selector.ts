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

/** `k=v` pairs sorted by key, joined: the signature of a selector, or of a pod's labels restricted to those keys. */
function signature(namespace: string, keys: string[], values: Record<string, string>): string {
  let sig = namespace
  for (const k of keys) sig += `\n${k}=${values[k] ?? ''}`
  return sig
}

/**
 * Objects with selectors (Services, PodDisruptionBudgets) indexed by the exact label pairs they
 * require, so that a pod's change finds the few whose selector may match it without scanning every
 * selector of its namespace (which share pairs such as `app.kubernetes.io/name`): for each distinct
 * set of keys the namespace's selectors use (typically one or two), the pod's values for those keys
 * are looked up. Selectors that require no pair (only expressions, or empty) are candidates for
 * every pod.
 */
export class SelectorIndex {
  #bySignature = new Map<string, Set<string>>()
  #open = new Map<string, Set<string>>()
  /** namespace → joined key set → its keys and how many selectors use it */
  #keySets = new Map<string, Map<string, { keys: string[]; count: number }>>()
  #entries = new Map<string, { namespace: string; keys: string[]; signature: string | undefined }>()

  /** Indexes (or re-indexes) `key` in `namespace` under the pairs of `required` (empty: every pod). */
  set(key: string, namespace: string, required: Record<string, string>): void {
    this.delete(key)
    const keys = Object.keys(required).sort()
    if (keys.length === 0) {
      this.#entries.set(key, { namespace, keys, signature: undefined })
      add(this.#open, namespace, key)
      return
    }
    const sig = signature(namespace, keys, required)
    this.#entries.set(key, { namespace, keys, signature: sig })
    add(this.#bySignature, sig, key)
    let sets = this.#keySets.get(namespace)
    if (!sets) this.#keySets.set(namespace, (sets = new Map()))
    const joined = keys.join('\n')
    const ks = sets.get(joined)
    if (ks) ks.count++
    else sets.set(joined, { keys, count: 1 })
  }

  /** Removes `key`. */
  delete(key: string): void {
    const e = this.#entries.get(key)
    if (!e) return
    this.#entries.delete(key)
    if (e.signature === undefined) return remove(this.#open, e.namespace, key)
    remove(this.#bySignature, e.signature, key)
    const sets = this.#keySets.get(e.namespace)
    const joined = e.keys.join('\n')
    const ks = sets?.get(joined)
    if (ks && --ks.count === 0) sets?.delete(joined)
    if (sets?.size === 0) this.#keySets.delete(e.namespace)
  }

  /** Keys whose selector may match an object with these labels in this namespace. */
  candidates(namespace: string, labels: Labels): string[] {
    const l = labels ?? {}
    const out = [...(this.#open.get(namespace) ?? [])]
    for (const { keys } of this.#keySets.get(namespace)?.values() ?? []) {
      if (!keys.every((k) => Object.hasOwn(l, k))) continue
      for (const key of this.#bySignature.get(signature(namespace, keys, l)) ?? []) out.push(key)
    }
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
