/**
 * Label and field selectors in the string syntax of `?labelSelector=` and `?fieldSelector=`,
 * ported from apimachinery: pkg/labels/selector.go (`labels.Parse`: its lexer and parser, `=`,
 * `==`, `!=`, `in`, `notin`, exists, `!`, `>`/`<`, key and value validation, its messages) and
 * pkg/fields/selector.go (`fields.ParseSelector`: `=`, `==`, `!=`, backslash escapes).
 */
import { isQualifiedName, isValidLabelValue } from './names.ts'

/** selection.Operator, spelled as upstream spells it. */
export type Operator = '=' | '==' | '!=' | 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt'

/** One requirement of a label selector (labels.Requirement); `values` sorted, as sets.String.List gives them. */
export interface Requirement {
  readonly key: string
  readonly operator: Operator
  readonly values: readonly string[]
}

/** A compiled selector; `matches` takes the object's labels (or field values). */
export interface Selector {
  readonly empty: boolean
  matches(labels: Record<string, string> | undefined): boolean
  /** The selector in its canonical string form (the upstream `String()`). */
  toString(): string
}

/** The selector that matches everything. */
export const everything: Selector = { empty: true, matches: () => true, toString: () => '' }

/** Thrown for a selector string that does not parse; the HTTP layer answers 400. */
export class SelectorError extends Error {
  override name = 'SelectorError'
}

// ---- labels.Parse ----

type Token = 'error' | 'end' | ')' | ',' | '!' | '==' | '=' | '>' | 'id' | 'in' | '<' | '!=' | 'notin' | '('

const keywords = new Map<string, Token>([
  [')', ')'],
  [',', ','],
  ['!', '!'],
  ['==', '=='],
  ['=', '='],
  ['>', '>'],
  ['in', 'in'],
  ['<', '<'],
  ['!=', '!='],
  ['notin', 'notin'],
  ['(', '('],
])

const isWhitespace = (c: string): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n'
const isSpecial = (c: string): boolean => c === '=' || c === '!' || c === '(' || c === ')' || c === ',' || c === '>' || c === '<'

/** The upstream Lexer: the longest operator at a special symbol, else an identifier or keyword. */
function lex(s: string): [Token, string][] {
  const out: [Token, string][] = []
  let pos = 0
  for (;;) {
    while (pos < s.length && isWhitespace(s[pos] as string)) pos++
    if (pos >= s.length) {
      out.push(['end', ''])
      return out
    }
    if (isSpecial(s[pos] as string)) {
      let buffer = ''
      let last: [Token, string] | undefined
      while (pos < s.length && isSpecial(s[pos] as string)) {
        buffer += s[pos]
        const tok = keywords.get(buffer)
        if (tok !== undefined) last = [tok, buffer]
        else if (last !== undefined) break
        pos++
      }
      out.push(last ?? ['error', `error expected: keyword found '${buffer}'`])
    } else {
      const start = pos
      while (pos < s.length && !isSpecial(s[pos] as string) && !isWhitespace(s[pos] as string)) pos++
      const word = s.slice(start, pos)
      out.push([keywords.get(word) ?? 'id', word])
    }
  }
}

const binaryOperators = 'in, notin, =, ==, !=, gt, lt'

/** field.Invalid's Error(): `<path>: Invalid value: "<v>": <detail>` (a nil path prints `<nil>`). */
function invalidError(path: string, value: string, detail: string): string {
  return `${path}: Invalid value: ${JSON.stringify(value)}: ${detail}`
}

/** field.Invalid with a []string value, which Go prints as JSON. */
function invalidListError(path: string, values: readonly string[], detail: string): string {
  return `${path}: Invalid value: ${JSON.stringify(values)}: ${detail}`
}

/** `validateLabelKey` (IsQualifiedName, problems joined by "; "), or undefined. */
function keyError(key: string, path: string): string | undefined {
  const problems = isQualifiedName(key)
  return problems.length === 0 ? undefined : invalidError(path, key, problems.join('; '))
}

/**
 * labels.NewRequirement: the requirement, or the aggregate error (`[e1, e2]` when several) with
 * the upstream paths (`key`, `values`, `values[0][key]`) under `path`.
 */
export function newRequirement(key: string, operator: string, values: readonly string[], path?: string): Requirement {
  const errs: string[] = []
  const at = (child: string): string => (path === undefined ? child : `${path}.${child}`)
  const k = keyError(key, at('key'))
  if (k !== undefined) errs.push(k)
  switch (operator) {
    case 'in':
    case 'notin':
      if (values.length === 0) errs.push(invalidListError(at('values'), values, "for 'in', 'notin' operators, values set can't be empty"))
      break
    case '=':
    case '==':
    case '!=':
      if (values.length !== 1) errs.push(invalidListError(at('values'), values, 'exact-match compatibility requires one single value'))
      break
    case 'exists':
    case '!':
      if (values.length !== 0) errs.push(invalidListError(at('values'), values, 'values set must be empty for exists and does not exist'))
      break
    case 'gt':
    case 'lt':
      if (values.length !== 1) errs.push(invalidListError(at('values'), values, "for 'Gt', 'Lt' operators, exactly one value is required"))
      values.forEach((v, i) => {
        if (parseInt64(v) === undefined) errs.push(invalidError(`${at('values')}[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"))
      })
      break
    default:
      errs.push(
        `${at('operator')}: Unsupported value: ${JSON.stringify(operator)}: supported values: ${['in', 'notin', '=', '==', '!=', 'gt', 'lt', 'exists', '!'].map((o) => JSON.stringify(o)).join(', ')}`,
      )
  }
  values.forEach((v, i) => {
    const problems = isValidLabelValue(v)
    if (problems.length > 0) errs.push(invalidError(`${at('values')}[${i}][${key}]`, v, problems.join('; ')))
  })
  if (errs.length > 0) {
    const unique = [...new Set(errs)]
    throw new SelectorError(unique.length === 1 ? (unique[0] as string) : `[${unique.join(', ')}]`)
  }
  return { key, operator: operator as Operator, values }
}

/** Go's strconv.ParseInt(v, 10, 64). */
function parseInt64(v: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(v)) return undefined
  const n = BigInt(v)
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined
}

class Parser {
  #items: [Token, string][]
  #pos = 0
  constructor(selector: string) {
    this.#items = lex(selector)
  }
  /** In the Values context `in` and `notin` are identifiers. */
  #look(values: boolean): [Token, string] {
    const [tok, lit] = this.#items[this.#pos] as [Token, string]
    return [values && (tok === 'in' || tok === 'notin') ? 'id' : tok, lit]
  }
  #consume(values: boolean): [Token, string] {
    const r = this.#look(values)
    this.#pos++
    return r
  }

  parse(): Requirement[] {
    const reqs: Requirement[] = []
    for (;;) {
      const [tok, lit] = this.#look(true)
      if (tok === 'id' || tok === '!') {
        let r: Requirement
        try {
          r = this.#requirement()
        } catch (e) {
          throw new SelectorError(`unable to parse requirement: ${(e as Error).message}`)
        }
        reqs.push(r)
        const [t, l] = this.#consume(true)
        if (t === 'end') return reqs
        if (t === ',') {
          const [t2, l2] = this.#look(true)
          if (t2 !== 'id' && t2 !== '!') throw new SelectorError(`found '${l2}', expected: identifier after ','`)
        } else throw new SelectorError(`found '${l}', expected: ',' or 'end of string'`)
      } else if (tok === 'end') return reqs
      else throw new SelectorError(`found '${lit}', expected: !, identifier, or 'end of string'`)
    }
  }

  #requirement(): Requirement {
    let [tok, key] = this.#consume(true)
    let operator: Operator | undefined
    if (tok === '!') {
      operator = '!'
      ;[tok, key] = this.#consume(true)
    }
    if (tok !== 'id') throw new Error(`found '${key}', expected: identifier`)
    const k = keyError(key, '<nil>')
    if (k !== undefined) throw new Error(k)
    const [next] = this.#look(true)
    if (next === 'end' || next === ',') operator = operator ?? 'exists'
    if (operator === 'exists' || operator === '!') return newRequirement(key, operator, [])
    const [opTok, opLit] = this.#consume(false)
    const op = ({ in: 'in', '=': '=', '==': '==', '>': 'gt', '<': 'lt', notin: 'notin', '!=': '!=' } as Record<string, Operator>)[opTok]
    if (op === undefined) throw new Error(`found '${opLit}', expected: ${binaryOperators}`)
    const values = op === 'in' || op === 'notin' ? this.#values() : this.#exactValue()
    return newRequirement(key, op, [...values].sort(byteOrder))
  }

  #values(): Set<string> {
    const [tok, lit] = this.#consume(true)
    if (tok !== '(') throw new Error(`found '${lit}' expected: '('`)
    const [t, l] = this.#look(true)
    if (t === 'id' || t === ',') {
      const s = this.#identifiers()
      if (this.#consume(true)[0] !== ')') throw new Error(`found '${l}', expected: ')'`)
      return s
    }
    if (t === ')') {
      this.#consume(true)
      return new Set([''])
    }
    throw new Error(`found '${l}', expected: ',', ')' or identifier`)
  }

  #identifiers(): Set<string> {
    const s = new Set<string>()
    for (;;) {
      const [tok, lit] = this.#consume(true)
      if (tok === 'id') {
        s.add(lit)
        const [t2, l2] = this.#look(true)
        if (t2 === ',') continue
        if (t2 === ')') return s
        throw new Error(`found '${l2}', expected: ',' or ')'`)
      } else if (tok === ',') {
        if (s.size === 0) s.add('')
        const [t2] = this.#look(true)
        if (t2 === ')') {
          s.add('')
          return s
        }
        if (t2 === ',') {
          this.#consume(true)
          s.add('')
        }
      } else throw new Error(`found '${lit}', expected: ',', or identifier`)
    }
  }

  #exactValue(): Set<string> {
    const [t] = this.#look(true)
    if (t === 'end' || t === ',') return new Set([''])
    const [tok, lit] = this.#consume(true)
    if (tok === 'id') return new Set([lit])
    throw new Error(`found '${lit}', expected: identifier`)
  }
}

/** Go's string order (bytes; UTF-16 order agrees for the label alphabet). */
function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function requirementMatches(r: Requirement, labels: Record<string, string> | undefined): boolean {
  const has = labels !== undefined && Object.hasOwn(labels, r.key)
  const v = has ? (labels[r.key] as string) : undefined
  switch (r.operator) {
    case 'in':
    case '=':
    case '==':
      return v !== undefined && r.values.includes(v)
    case 'notin':
    case '!=':
      return v === undefined || !r.values.includes(v)
    case 'exists':
      return has
    case '!':
      return !has
    case 'gt':
    case 'lt': {
      if (v === undefined || r.values.length !== 1) return false
      const l = parseInt64(v)
      const x = parseInt64(r.values[0] as string)
      if (l === undefined || x === undefined) return false
      return r.operator === 'gt' ? l > x : l < x
    }
    default:
      return false
  }
}

/** Requirement.String(). */
export function requirementString(r: Requirement): string {
  const sym: Record<Operator, string> = { '=': '=', '==': '==', '!=': '!=', in: ' in ', notin: ' notin ', gt: '>', lt: '<', exists: '', '!': '' }
  const head = `${r.operator === '!' ? '!' : ''}${r.key}${sym[r.operator] ?? ''}`
  if (r.operator === 'exists' || r.operator === '!') return head
  const values = r.values.length === 1 ? r.values[0] : [...r.values].sort(byteOrder).join(',')
  return r.operator === 'in' || r.operator === 'notin' ? `${head}(${values})` : `${head}${values}`
}

/** A selector from requirements (sorted by key, stably, as labels.Parse leaves them). */
export function selectorOf(reqs: Requirement[]): Selector & { requirements: readonly Requirement[] } {
  const sorted = [...reqs].sort((a, b) => byteOrder(a.key, b.key))
  return {
    empty: sorted.length === 0,
    requirements: sorted,
    matches(labels) {
      for (const r of sorted) if (!requirementMatches(r, labels)) return false
      return true
    },
    toString: () => sorted.map(requirementString).join(','),
  }
}

/** labels.Parse: empty or undefined matches everything. Throws {@link SelectorError} with upstream's message. */
export function parseLabelSelector(selector: string | null | undefined): Selector & { requirements: readonly Requirement[] } {
  if (!selector) return { ...everything, requirements: [] }
  return selectorOf(new Parser(selector).parse())
}

// ---- fields.ParseSelector ----

/** fields.EscapeValue: `\`, `,` and `=` escaped with a backslash. */
export function escapeFieldValue(s: string): string {
  return s.replace(/[\\,=]/g, (c) => `\\${c}`)
}

/** fields.UnescapeValue, with its errors (InvalidEscapeSequence, UnescapedRune). */
export function unescapeFieldValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s
  let out = ''
  let inSlash = false
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') throw new SelectorError(`invalid field selector: invalid escape sequence: \\${c}`)
      out += c
      inSlash = false
    } else if (c === '\\') inSlash = true
    else if (c === ',' || c === '=') throw new SelectorError(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`)
    else out += c
  }
  if (inSlash) throw new SelectorError('invalid field selector: invalid escape sequence: \\')
  return out
}

/** fields.splitTerms: commas not escaped by a backslash separate terms (kept escaped). */
export function splitFieldTerms(selector: string): string[] {
  if (selector === '') return []
  const terms: string[] = []
  let start = 0
  let inSlash = false
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i]
    if (inSlash) inSlash = false
    else if (c === '\\') inSlash = true
    else if (c === ',') {
      terms.push(selector.slice(start, i))
      start = i + 1
    }
  }
  terms.push(selector.slice(start))
  return terms
}

/** fields.splitTerm: the first `!=`, `==` or `=` splits; the value is returned still escaped. */
export function splitFieldTerm(term: string): { lhs: string; op: string; rhs: string } | undefined {
  const m = /!=|==|=/.exec(term)
  if (m === null) return undefined
  return { lhs: term.slice(0, m.index), op: m[0], rhs: term.slice(m.index + m[0].length) }
}

/** A parsed field selector; `fields` are the paths its terms read. */
export interface FieldSelector extends Selector {
  readonly fields: string[]
  /** Selector.RequiresExactMatch: the value an `=` term requires of `field`, if any. */
  requiresExactMatch(field: string): string | undefined
}

interface FieldTerm {
  field: string
  value: string
  not: boolean
}

/**
 * fields.ParseSelector (`metadata.name=x,status.phase!=Running`): `=`, `==`, `!=`, values with
 * backslash escapes, no white space trimmed. The returned selector takes a flat map of field path
 * → value built by {@link fieldsOf}.
 */
export function parseFieldSelector(selector: string | null | undefined): FieldSelector {
  if (!selector) return { ...everything, fields: [], requiresExactMatch: () => undefined }
  const terms: FieldTerm[] = []
  for (const part of splitFieldTerms(selector).sort(byteOrder)) {
    if (part === '') continue
    const t = splitFieldTerm(part)
    if (t === undefined) throw new SelectorError(`invalid selector: '${selector}'; can't understand '${part}'`)
    terms.push({ field: t.lhs, value: unescapeFieldValue(t.rhs), not: t.op === '!=' })
  }
  return {
    empty: terms.length === 0,
    fields: terms.map((t) => t.field),
    matches(fields) {
      for (const t of terms) if (((fields?.[t.field] ?? '') === t.value) === t.not) return false
      return true
    },
    toString: () => terms.map((t) => `${t.field}${t.not ? '!=' : '='}${escapeFieldValue(t.value)}`).join(','),
    requiresExactMatch: (field) => terms.find((t) => !t.not && t.field === field)?.value,
  }
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

/** The selector that matches nothing (labels.Nothing: what a null LabelSelector object selects). */
export const nothing: Selector = { empty: false, matches: () => false, toString: () => '' }

const SELECTOR_OPERATORS: Readonly<Record<string, Operator>> = { In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' }

/**
 * metav1.LabelSelectorAsSelector: a LabelSelector object (`matchLabels`, `matchExpressions`) as a
 * selector, its requirements sorted by key (matchLabels first among equal keys), set values sorted;
 * null selects nothing, `{}` everything. Throws {@link SelectorError} for an operator it does not
 * know and for a requirement `labels.NewRequirement` refuses, with upstream's messages.
 */
export function labelSelectorAsSelector(sel: unknown): Selector {
  if (sel === null || sel === undefined) return nothing
  const s = sel as { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }
  const matchLabels = Object.entries(s.matchLabels ?? {}).sort(([x], [y]) => byteOrder(x, y))
  const exprs = s.matchExpressions ?? []
  if (matchLabels.length + exprs.length === 0) return everything
  const reqs: Requirement[] = matchLabels.map(([key, v]) => newRequirement(key, '=', [v]))
  for (const e of exprs) {
    const operator = SELECTOR_OPERATORS[e.operator]
    if (operator === undefined) throw new SelectorError(`${JSON.stringify(e.operator)} is not a valid label selector operator`)
    reqs.push(newRequirement(e.key, operator, [...(e.values ?? [])]))
  }
  return selectorOf(reqs)
}

/**
 * Renders a LabelSelector object in the string syntax, as metav1.FormatLabelSelector does:
 * `LabelSelectorAsSelector(...).String()`, `<error>` for one it refuses (and '' where upstream
 * writes `<none>`).
 */
export function formatLabelSelector(sel: unknown): string {
  if (sel === null || typeof sel !== 'object') return ''
  try {
    return labelSelectorAsSelector(sel).toString()
  } catch (e) {
    if (e instanceof SelectorError) return '<error>'
    throw e
  }
}
