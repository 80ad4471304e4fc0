/**
 * Label and field selectors in the string syntax of `?labelSelector=` and `?fieldSelector=`
 * (apimachinery `labels.Parse` / `fields.ParseSelector`): `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
 * `a notin (x)`, `a` (exists), `!a` (does not exist), requirements joined by commas (AND).
 */

type Requirement =
  | { op: 'eq' | 'neq'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: string[] }
  | { op: 'exists' | 'notexists'; key: string }

/** A compiled selector; `matches` takes the object's labels (or field values). */
export interface Selector {
  readonly empty: boolean
  matches(labels: Record<string, string> | undefined): boolean
}

/** The selector that matches everything. */
export const everything: Selector = { empty: true, matches: () => true }

/** Thrown for a selector string that does not parse; the HTTP layer answers 400. */
export class SelectorError extends Error {
  override name = 'SelectorError'
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = []
  let depth = 0
  let cur = ''
  for (const ch of s) {
    if (ch === '(') depth++
    else if (ch === ')') depth--
    if (ch === ',' && depth === 0) {
      out.push(cur)
      cur = ''
    } else cur += ch
  }
  out.push(cur)
  return out.map((t) => t.trim()).filter((t) => t !== '')
}

const setTerm = /^([^\s!=()]+)\s+(in|notin)\s*\(([^)]*)\)$/
const eqTerm = /^([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=()]*)$/
const keyTerm = /^(!?)\s*([^\s!=()]+)$/

function parseRequirements(selector: string, allowSets: boolean): Requirement[] {
  const reqs: Requirement[] = []
  for (const term of splitTerms(selector)) {
    let m = allowSets ? setTerm.exec(term) : null
    if (m) {
      const values = (m[3] ?? '').split(',').map((v) => v.trim()).filter((v) => v !== '')
      reqs.push({ op: m[2] === 'in' ? 'in' : 'notin', key: m[1] ?? '', values })
      continue
    }
    m = eqTerm.exec(term)
    if (m) {
      reqs.push({ op: m[2] === '!=' ? 'neq' : 'eq', key: m[1] ?? '', value: m[3] ?? '' })
      continue
    }
    m = allowSets ? keyTerm.exec(term) : null
    if (m) {
      reqs.push({ op: m[1] === '!' ? 'notexists' : 'exists', key: m[2] ?? '' })
      continue
    }
    throw new SelectorError(`unable to parse requirement: ${JSON.stringify(term)}`)
  }
  return reqs
}

function compile(reqs: Requirement[]): Selector {
  if (reqs.length === 0) return everything
  return {
    empty: false,
    matches(labels) {
      for (const r of reqs) {
        const has = labels !== undefined && Object.hasOwn(labels, r.key)
        const v = has ? labels[r.key] : undefined
        switch (r.op) {
          case 'eq':
            if (v !== r.value) return false
            break
          case 'neq':
            if (v === r.value) return false
            break
          case 'in':
            if (v === undefined || !r.values.includes(v)) return false
            break
          case 'notin':
            if (v !== undefined && r.values.includes(v)) return false
            break
          case 'exists':
            if (!has) return false
            break
          case 'notexists':
            if (has) return false
            break
        }
      }
      return true
    },
  }
}

/** Parses a label selector string; empty or undefined matches everything. */
export function parseLabelSelector(selector: string | null | undefined): Selector {
  if (!selector) return everything
  return compile(parseRequirements(selector, true))
}

/**
 * Parses a field selector (`metadata.name=x,status.phase!=Running`): only `=`, `==`, `!=`.
 * The returned selector takes a flat map of field path → value built by {@link fieldsOf}.
 */
export function parseFieldSelector(selector: string | null | undefined): Selector & { fields: string[] } {
  if (!selector) return { ...everything, fields: [] }
  const reqs = parseRequirements(selector, false)
  return { ...compile(reqs), fields: reqs.map((r) => r.key) }
}

/** Reads dotted field paths from an object as strings, for field selectors. */
export function fieldsOf(obj: unknown, paths: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const path of paths) {
    let cur: unknown = obj
    for (const part of path.split('.')) {
      cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[part] : undefined
    }
    // The server compares a missing field as the empty string (`spec.nodeName=` selects unscheduled pods).
    out[path] = cur === undefined || cur === null ? '' : String(cur)
  }
  return out
}

/** Renders a LabelSelector object (`matchLabels`/`matchExpressions`) in the string syntax. */
export function formatLabelSelector(sel: unknown): string {
  if (sel === null || typeof sel !== 'object') return ''
  const s = sel as { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }
  const parts: string[] = []
  for (const [k, v] of Object.entries(s.matchLabels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) parts.push(`${k}=${v}`)
  for (const e of s.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',')
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`)
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`)
    else if (e.operator === 'Exists') parts.push(e.key)
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`)
  }
  return parts.join(',')
}
