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
// rejects C0/C1 controls, DEL, U+FEFF and lone surrogates in a document.
const UNSAFE = /[\u007f-\u009f\u2028\u2029\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

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
 * so kubectl) read as line breaks.
 */
export const YAML_OUTPUT = {
  version: '1.1',
  lineWidth: 0,
  aliasDuplicateObjects: false,
  customTags: (tags: YAML.Tags): YAML.Tags =>
    tags.map((tag) =>
      typeof tag !== 'string' && tag.tag === 'tag:yaml.org,2002:str'
        ? ({ ...tag, stringify: (item: { value?: unknown }) => (plainSafe(String(item.value)) ? String(item.value) : quoteString(String(item.value))) } as YAML.ScalarTag)
        : tag,
    ),
} as const
