/**
 * What `<%= x %>` writes: one YAML scalar (or JSON flow collection) that a YAML 1.1 parser reads
 * back as exactly `x`. Strings are always double-quoted, so a value containing a newline, `: `,
 * `#`, quotes, `{{`, `<%` or a YAML 1.1 boolean word such as `on` stays one string. Raw text can
 * only enter through helpers, which return {@link Raw}.
 */
import type YAML from 'yaml'

/** Template text produced by a helper (toYaml, include, …): written verbatim by `<%= %>`. */
export class Raw {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
  toString(): string {
    return this.text
  }
}

// JSON leaves these unescaped, but YAML 1.1 reads U+0085, U+2028 and U+2029 as line breaks and
// rejects C0/C1 controls, DEL, U+FEFF, the noncharacters U+FFFE and U+FFFF (go-yaml, so kubectl,
// refuses the whole stream) and lone surrogates in a document.
const UNSAFE = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** A double-quoted YAML scalar for any string. */
export function quoteString(s: string): string {
  return JSON.stringify(s).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** A number as YAML 1.1 reads it back: YAML 1.1 floats need a dot (`1e-7` alone would be a string). */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) throw new TypeError(`cannot write ${n} as a YAML number`)
  const s = String(n)
  return /e/i.test(s) && !s.includes('.') ? s.replace(/e/i, '.0e') : s
}

/** The escape function of every template: a YAML-safe rendering of one value. */
export function yamlScalar(value: unknown): string {
  if (value instanceof Raw) return value.text
  switch (typeof value) {
    case 'string':
      return quoteString(value)
    case 'number':
      return formatNumber(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'undefined':
      throw new TypeError('value is undefined (a missing value: use required() to demand it or default() to give one)')
    case 'object':
      if (value === null) return 'null'
      return flow(value)
    default:
      throw new TypeError(`cannot write a ${typeof value} into a template`)
  }
}

/** A JSON flow collection (valid YAML) with every string made safe. */
function flow(value: object): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : yamlScalar(v))).join(', ')}]`
  const parts: string[] = []
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key]
    if (v !== undefined) parts.push(`${quoteString(key)}: ${yamlScalar(v)}`)
  }
  return `{${parts.join(', ')}}`
}

/** A string that every YAML 1.1 reader takes as that same string without quotes. */
function plainSafe(s: string): boolean {
  return /^[A-Za-z_/][A-Za-z0-9_./@:-]*$/.test(s) && !s.endsWith(':') && !/^(y|n|yes|no|on|off|true|false|null)$/i.test(s)
}

/**
 * Options for every YAML the project writes (output manifests, toYaml): YAML 1.1, no aliases, no
 * folding, and strings either plain when unambiguous or quoted by {@link quoteString}. The `yaml`
 * library's own string writer leaves U+2028 and U+0085 raw, which YAML 1.1 readers (libyaml, go-yaml,
 * so kubectl) read as line breaks. Without its merge tag, it writes a key or string `<<` quoted: plain,
 * a YAML 1.1 reader takes it for a merge key.
 */
export const YAML_OUTPUT = {
  version: '1.1',
  lineWidth: 0,
  aliasDuplicateObjects: false,
  customTags: (tags: YAML.Tags): YAML.Tags =>
    tags
      .filter((tag) => typeof tag === 'string' || tag.tag !== 'tag:yaml.org,2002:merge')
      .map((tag) =>
        typeof tag !== 'string' && tag.tag === 'tag:yaml.org,2002:str'
          ? ({ ...tag, stringify: (item: { value?: unknown }) => (plainSafe(String(item.value)) ? String(item.value) : quoteString(String(item.value))) } as YAML.ScalarTag)
          : tag,
      ),
} as const

/** A YAML 1.1 reader's implicit keys end at 1024 characters; the library writes longer keys in another form. */
const MAX_IMPLICIT_KEY = 1024

/**
 * Block YAML text of plain data (plain or null-prototype maps, arrays, strings, numbers, booleans,
 * null), exactly as `YAML.stringify(value, YAML_OUTPUT)` writes it: a property test holds the two
 * equal. Anything else (a class instance, a bigint, a key too long to be implicit) gives undefined,
 * and the library writes it. Every render prints each object it made, and from a cold start the
 * library, which first builds a document of nodes, takes several milliseconds for what this writes
 * in a fraction of one.
 */
export function blockYaml(value: unknown): string | undefined {
  if (!isCollection(value)) {
    const text = scalarText(value)
    return text === undefined ? undefined : `${text}\n`
  }
  const lines: string[] = []
  if (!writeCollection(value, '', lines, '')) return undefined
  if (lines.length === 0) return Array.isArray(value) ? '[]\n' : '{}\n'
  lines.push('')
  return lines.join('\n')
}

/**
 * A map or list of plain data. The library writes what a `toJSON` returns, and any iterable as a
 * list (by iterating it), so objects with either, and array subclasses, are left to it.
 */
function isCollection(v: unknown): v is object {
  if (v === null || typeof v !== 'object' || typeof (v as { toJSON?: unknown }).toJSON === 'function') return false
  const proto: unknown = Object.getPrototypeOf(v)
  if (Array.isArray(v)) return proto === Array.prototype && !Object.hasOwn(v, Symbol.iterator)
  return (proto === Object.prototype || proto === null) && !(Symbol.iterator in v)
}

/** A string as the output options write it: plain when unambiguous, otherwise double-quoted. */
function stringText(s: string): string {
  return plainSafe(s) ? s : quoteString(s)
}

/** The text of a scalar, as the library's YAML 1.1 tags write it; undefined outside plain data. */
function scalarText(v: unknown): string | undefined {
  switch (typeof v) {
    case 'string':
      return stringText(v)
    case 'number':
      if (Number.isNaN(v)) return '.nan'
      if (!Number.isFinite(v)) return v < 0 ? '-.inf' : '.inf'
      return Object.is(v, -0) ? '-0' : String(v)
    case 'boolean':
      return v ? 'true' : 'false'
    case 'object':
      return v === null ? 'null' : undefined
    default:
      return undefined
  }
}

/**
 * Appends the lines of a collection's entries. `first` is what the first line starts with (a list
 * item's `- ` joins the first entry of a nested collection), `pad` what every other line starts with.
 * False when something is outside plain data.
 */
function writeCollection(value: object, first: string, lines: string[], pad: string): boolean {
  let lead = first
  const entry = (head: string, v: unknown): boolean => {
    if (isCollection(v)) {
      const empty = Array.isArray(v) ? v.length === 0 : !Object.values(v).some((x) => x !== undefined)
      if (empty) {
        lines.push(`${head} ${Array.isArray(v) ? '[]' : '{}'}`)
      } else if (Array.isArray(value)) {
        // A list item's collection starts on the item's line: `- a: 1` or `- - a`.
        if (!writeCollection(v, `${head} `, lines, `${pad}  `)) return false
      } else {
        lines.push(head)
        if (!writeCollection(v, `${pad}  `, lines, `${pad}  `)) return false
      }
    } else {
      const text = v === undefined && Array.isArray(value) ? 'null' : scalarText(v)
      if (text === undefined) return false
      lines.push(`${head} ${text}`)
    }
    lead = pad
    return true
  }
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (!entry(`${lead}-`, item)) return false
    return true
  }
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key]
    if (v === undefined) continue
    const k = stringText(key)
    if (k.length > MAX_IMPLICIT_KEY) return false
    if (!entry(`${lead}${k}:`, v)) return false
  }
  return true
}
