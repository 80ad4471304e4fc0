/**
 * Label selectors in their string form (`app.kubernetes.io/component=cache,tier in (a,b),!legacy`)
 * for overlay targets and the platform's overlays: the grammar of apimachinery
 * pkg/labels/selector.go (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`), matched against an
 * object's labels. A leaf of the render: it reads no cluster.
 */

/** One requirement of a selector. */
export interface Requirement {
  key: string
  op: '=' | '!=' | 'in' | 'notin' | 'exists' | '!'
  values: string[]
  /** As written, to name it in messages. */
  text: string
}

const KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

/** Splits on commas outside parentheses. */
function terms(s: string): string[] {
  const out: string[] = []
  let depth = 0
  let cur = ''
  for (const c of s) {
    if (c === '(') depth++
    if (c === ')') depth--
    if (c === ',' && depth === 0) {
      out.push(cur)
      cur = ''
    } else cur += c
  }
  out.push(cur)
  return out.map((t) => t.trim())
}

/** Parses a selector; throws an Error saying which term is wrong. */
export function parseSelector(text: string): Requirement[] {
  if (text.trim() === '') return []
  return terms(text).map((term): Requirement => {
    const check = (key: string, values: string[]): void => {
      if (!KEY.test(key)) throw new Error(`${JSON.stringify(term)}: invalid label key ${JSON.stringify(key)}`)
      for (const v of values) if (v.length > 63 || !VALUE.test(v)) throw new Error(`${JSON.stringify(term)}: invalid label value ${JSON.stringify(v)}`)
    }
    let m = /^(\S+?)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term)
    if (m) {
      const values = m[3]!.split(',').map((v) => v.trim())
      check(m[1]!, values)
      return { key: m[1]!, op: m[2] as 'in' | 'notin', values, text: term }
    }
    m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term)
    if (m) {
      check(m[1]!, [m[3]!])
      return { key: m[1]!, op: m[2] === '!=' ? '!=' : '=', values: [m[3]!], text: term }
    }
    m = /^(!?)\s*([^=!\s()]+)$/.exec(term)
    if (m) {
      check(m[2]!, [])
      return { key: m[2]!, op: m[1] === '!' ? '!' : 'exists', values: [], text: term }
    }
    throw new Error(`${JSON.stringify(term)}: not a label requirement (key=value, key!=value, key in (a,b), key notin (a,b), key, !key)`)
  })
}

/** Whether labels satisfy every requirement. */
export function matchesSelector(reqs: readonly Requirement[], labels: Readonly<Record<string, string>>): boolean {
  return reqs.every((r) => {
    const has = Object.hasOwn(labels, r.key)
    const v = has ? labels[r.key]! : undefined
    switch (r.op) {
      case '=':
        return has && v === r.values[0]
      case '!=':
        return !has || v !== r.values[0]
      case 'in':
        return has && r.values.includes(v!)
      case 'notin':
        return !has || !r.values.includes(v!)
      case 'exists':
        return has
      case '!':
        return !has
    }
  })
}
