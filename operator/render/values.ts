/**
 * Values: chart defaults ← CR spec ← values files ← --set pairs. Maps merge deeply, arrays
 * replace, null deletes a key. Every map the merge builds has a null prototype, so that keys such
 * as `__proto__`, `constructor` or `prototype` coming from user data are ordinary, inert keys.
 */
import { RenderError } from './errors.ts'

/** A map of values as the templates see it (null-prototype). */
export type Values = { [key: string]: unknown }

/** True for maps that come from parsed data (plain or null-prototype objects), not arrays or class instances. */
export function isPlainMap(v: unknown): v is Values {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false
  const proto: unknown = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/** A deep copy of parsed data with null-prototype maps; `dropNulls` leaves out null values of maps. */
export function cloneData(v: unknown, dropNulls = false): unknown {
  if (Array.isArray(v)) return v.map((item) => cloneData(item, dropNulls))
  if (isPlainMap(v)) {
    const out: Values = Object.create(null)
    for (const key of Object.keys(v)) {
      const item = v[key]
      if (item === undefined || (dropNulls && item === null)) continue
      out[key] = cloneData(item, dropNulls)
    }
    return out
  }
  return v
}

/** Merges `overlay` over `base` without mutating either: maps deeply, arrays and scalars replace, null deletes. */
export function mergeValues(base: Values, overlay: Values): Values {
  const out: Values = Object.create(null)
  for (const key of Object.keys(base)) out[key] = base[key]
  for (const key of Object.keys(overlay)) {
    const next = overlay[key]
    if (next === null) {
      delete out[key]
      continue
    }
    if (next === undefined) continue
    const prev = Object.hasOwn(out, key) ? out[key] : undefined
    out[key] = isPlainMap(prev) && isPlainMap(next) ? mergeValues(prev, next) : cloneData(next, true)
  }
  return out
}

/** Merges a chain of value sources, lowest precedence first. */
export function mergeAll(sources: Values[]): Values {
  let out: Values = Object.create(null)
  for (const s of sources) out = mergeValues(out, s)
  return out
}

const INDEX = /^(.*)\[(\d+)\]$/

/**
 * Parses one `--set` argument the way Helm does: `a.b=1,c[0]=x,d={x,y}`, `\.` and `\,` escape,
 * `true`/`false`/`null` and integers are typed unless `asString` (`--set-string`).
 */
export function parseSet(arg: string, asString = false): Values {
  const out: Values = Object.create(null)
  for (const pair of splitUnescaped(arg, ',', true)) {
    const eq = indexOfUnescaped(pair, '=')
    if (eq <= 0) throw new RenderError('input', [`--set ${JSON.stringify(pair)}: expected key=value`])
    const path = splitUnescaped(pair.slice(0, eq), '.', false).map(unescape)
    const raw = pair.slice(eq + 1)
    const value = raw.startsWith('{') && raw.endsWith('}')
      ? (raw.length === 2 ? [] : splitUnescaped(raw.slice(1, -1), ',', false).map((s) => typed(unescape(s), asString)))
      : typed(unescape(raw), asString)
    assignPath(out, path, value, pair)
  }
  return out
}

/**
 * One `key=value` whose value is already data (`--set-json`, `--set-file`): the key is a path as
 * in `--set` (`a.b`, `list[0].key`, `\.` escapes), the value is taken as it is.
 */
export function parseSetValue(key: string, value: unknown, flag: string): Values {
  const out: Values = Object.create(null)
  const path = splitUnescaped(key, '.', false).map(unescape)
  assignPath(out, path, value, `${key} (${flag})`)
  return out
}

/**
 * Parses one `--set-json` argument as Helm does (pkg/strvals/parser.go ParseJSON): `key=json`
 * pairs separated by commas, `a={"x":2},b.c=[1],d=` — a key as in `--set` (`.` nests, `[i]`
 * indexes, `\` escapes the next character), ending at `=` (a `,` before it is an error); the
 * value one JSON value (Go's json.Decoder reads just that much of the rest), then blanks and an
 * optional comma; an empty value is null. A later key of the same argument replaces an earlier one.
 */
export function parseSetJson(arg: string): Values {
  // A JSON object as the whole argument merges as a values file does (Helm 3.17's MergeValues: mergeMaps).
  if (arg.trimStart().startsWith('{')) {
    let parsed: unknown
    try {
      parsed = JSON.parse(arg)
    } catch (err) {
      throw new RenderError('input', [`--set-json ${JSON.stringify(arg.slice(0, 40))}: invalid JSON object: ${(err as Error).message}`])
    }
    if (!isPlainMap(parsed)) throw new RenderError('input', [`--set-json ${JSON.stringify(arg.slice(0, 40))}: expected a JSON object or key=json`])
    return cloneData(parsed) as Values
  }
  const out: Values = Object.create(null)
  const replaced: string[][] = []
  let i = 0
  const fail = (key: string, message: string): never => {
    throw new RenderError('input', [`--set-json ${key}: ${message}`])
  }
  while (i < arg.length) {
    let key = ''
    for (;;) {
      if (i >= arg.length) fail(JSON.stringify(key), 'has no value (expected key=json)')
      const c = arg[i]!
      if (c === '\\' && i + 1 < arg.length) {
        key += arg.slice(i, i + 2)
        i += 2
      } else if (c === '=') {
        i++
        break
      } else if (c === ',') fail(JSON.stringify(key), 'has no value (cannot end with ,)')
      else {
        key += c
        i++
      }
    }
    while (i < arg.length && /\s/.test(arg[i]!)) i++
    let value: unknown = null
    if (i < arg.length && arg[i] !== ',') {
      const end = jsonValueEnd(arg, i)
      if (end === undefined) fail(key, `invalid JSON value at ${JSON.stringify(arg.slice(i, i + 20))}`)
      try {
        value = JSON.parse(arg.slice(i, end))
      } catch (err) {
        fail(key, (err as Error).message)
      }
      i = end!
      while (i < arg.length && /\s/.test(arg[i]!)) i++
    }
    if (arg[i] === ',') i++
    // Helm's set() leaves an empty key out.
    if (key !== '') {
      const path = splitUnescaped(key, '.', false).map(unescape)
      assignPath(out, path, value, `${key} (--set-json)`)
      replaced.push(path)
    }
  }
  REPLACED.set(out, replaced)
  return out
}

/**
 * The key paths each `--set-json key=json` layer sets. Helm writes them into the user's values
 * (pkg/cli/values/options.go MergeValues: strvals.ParseJSON into the values files' merge), so a
 * JSON map replaces what the values files and earlier flags held at its key, where a values file
 * merges; the chart's defaults still merge beneath (chartutil.CoalesceValues).
 */
const REPLACED = new WeakMap<Values, string[][]>()

/** The user's layers (lowest first) with what each `--set-json key=json` layer sets taken out of the layers below it. */
export function withReplacements(layers: Values[]): Values[] {
  const out = [...layers]
  for (const [i, layer] of layers.entries()) {
    for (const path of REPLACED.get(layer) ?? []) {
      // Up to a list: a list is replaced whole by the merge anyway.
      const end = path.findIndex((step) => INDEX.test(step))
      const keys = end === -1 ? path : [...path.slice(0, end), (INDEX.exec(path[end]!)?.[1] ?? '')]
      for (let j = 0; j < i; j++) out[j] = withoutPath(out[j]!, keys)
    }
  }
  return out
}

/** `v` without the value at `path` (a copy along the path; `v` itself when there is nothing there). */
function withoutPath(v: Values, path: readonly string[]): Values {
  const [head, ...rest] = path
  if (head === undefined || !Object.hasOwn(v, head)) return v
  const child = v[head]
  if (rest.length > 0 && !isPlainMap(child)) return v
  const copy: Values = Object.create(null)
  for (const k of Object.keys(v)) if (k !== head) copy[k] = v[k]
  if (rest.length > 0) copy[head] = withoutPath(child as Values, rest)
  return copy
}

/** Where the JSON value that starts at `from` ends: brackets matched outside strings, a string, or a scalar token. */
function jsonValueEnd(s: string, from: number): number | undefined {
  const c = s[from]
  if (c === '{' || c === '[') {
    let depth = 0
    for (let i = from; i < s.length; i++) {
      const ch = s[i]
      if (ch === '"') {
        const str = /^"(?:[^"\\]|\\.)*"/.exec(s.slice(i))
        if (!str) return undefined
        i += str[0].length - 1
      } else if (ch === '{' || ch === '[') depth++
      else if (ch === '}' || ch === ']') {
        depth--
        if (depth === 0) return i + 1
      }
    }
    return undefined
  }
  const token = /^(?:"(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(s.slice(from))
  return token ? from + token[0].length : undefined
}

function typed(s: string, asString: boolean): unknown {
  if (asString) return s
  if (s === 'true') return true
  if (s === 'false') return false
  if (s === 'null') return null
  if (/^[-+]?(0|[1-9][0-9]*)$/.test(s)) {
    const n = Number(s)
    if (Number.isSafeInteger(n)) return n
  }
  return s
}

function assignPath(root: Values, path: string[], value: unknown, pair: string): void {
  let node: Values = root
  for (let i = 0; i < path.length; i++) {
    const last = i === path.length - 1
    const m = INDEX.exec(path[i] ?? '')
    const key = m ? (m[1] ?? '') : (path[i] ?? '')
    if (key === '') throw new RenderError('input', [`--set ${JSON.stringify(pair)}: empty key`])
    const map = node
    if (m) {
      const index = Number(m[2])
      if (index > 10000) throw new RenderError('input', [`--set ${JSON.stringify(pair)}: index ${index} is too large`])
      const existing = Object.hasOwn(map, key) ? map[key] : undefined
      const list: unknown[] = Array.isArray(existing) ? existing : []
      map[key] = list
      while (list.length <= index) list.push(null)
      if (last) list[index] = value
      else {
        const child = list[index]
        const next = isPlainMap(child) ? child : Object.create(null)
        list[index] = next
        node = next
      }
    } else if (last) {
      map[key] = value
    } else {
      const existing = Object.hasOwn(map, key) ? map[key] : undefined
      const next: Values = isPlainMap(existing) ? existing : Object.create(null)
      map[key] = next
      node = next
    }
  }
}

function indexOfUnescaped(s: string, ch: string): number {
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\') i++
    else if (s[i] === ch) return i
  }
  return -1
}

/** Splits on `sep` unless escaped; with `braces`, separators inside `{…}` do not split. */
function splitUnescaped(s: string, sep: string, braces: boolean): string[] {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < s.length; i++) {
    const c = s[i]
    if (c === '\\') i++
    else if (braces && c === '{') depth++
    else if (braces && c === '}') depth = Math.max(0, depth - 1)
    else if (c === sep && depth === 0) {
      parts.push(s.slice(start, i))
      start = i + 1
    }
  }
  parts.push(s.slice(start))
  return parts
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, '$1')
}
