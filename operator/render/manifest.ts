/**
 * From template output to objects and back: YAML 1.1 parsing (what Kubernetes reads) with
 * duplicate keys rejected, stamping of namespace and standard labels, deterministic ordering, and
 * the YAML/JSON text the CLI prints.
 */
import YAML from 'yaml'
import { firstLine, lineAt, RenderError, yamlData, yamlMessage } from './errors.ts'
import { blockYaml, YAML_OUTPUT } from './scalar.ts'
import { isPlainMap } from './values.ts'

/** An object a chart rendered. */
export interface RenderedObject {
  apiVersion: string
  kind: string
  metadata: {
    name: string
    namespace?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    [field: string]: unknown
  }
  [field: string]: unknown
}

// Kubernetes (sigs.k8s.io/yaml) reads an unquoted date as a string, not as a YAML 1.1 timestamp.
const PARSE = {
  version: '1.1',
  uniqueKeys: true,
  prettyErrors: true,
  customTags: (tags: YAML.Tags) => tags.filter((t) => typeof t === 'string' || t.tag !== 'tag:yaml.org,2002:timestamp'),
} as const

/**
 * Parsed output by template text (as JSON, so each hit returns fresh objects). A resync renders
 * unchanged CRs into the same text again; parsing YAML is most of a render's cost.
 */
const parsed = new Map<string, string>()
const PARSE_CACHE_SIZE = 512

/** The instance a text was rendered for: its name and namespace, the parts of a fleet's renders that differ. */
export interface RenderedFor {
  name: string
  namespace: string
}

/**
 * Parsed output by template text with the instance's name and namespace replaced by placeholders
 * ({@link placeholders}): CRs of one spec render the same text but for their names, and one parse
 * serves them all. An entry is made for a generic text seen a second time, when parsing the
 * placeholder text gives, placeholders put back, exactly what parsing the real text gave, and the
 * text has no escaped double-quoted key nor escaped scalar holding a placeholder, no collection as
 * a key, no tag holding a placeholder, and no scalar holding one with an explicit tag or a block
 * header that holds one. Every plain scalar that holds one is kept, since another name could
 * change its type (`3`, `true`, `1e3` are DNS names), and every key, whose length could pass
 * YAML's 1,024: each use checks, with the schema's own tests, that each still resolves as a string
 * and each key stays under 1,000 characters, and parses the real text when one does not. `null`:
 * the text was found unfit, do not try it again.
 */
const generic = new Map<string, GenericEntry | null>()
/** Generic texts seen once (an entry is made at the second): a single render pays no second parse. */
const seenOnce = new Map<string, true>()

interface GenericEntry {
  /** The objects' JSON, placeholders in their strings. */
  json: string
  /** Plain scalars (keys or values) holding a placeholder, as parsed. */
  plain: string[]
  /** Keys holding a placeholder, as parsed: an implicit key longer than 1,024 characters is an error. */
  keys: string[]
}

/** Implicit keys up to this long are read the same whatever their length (YAML allows 1,024). */
const KEY_LENGTH_LIMIT = 1000

const NAME_MARK = 'qqzname0qq'
const NAMESPACE_MARK = 'qqznamespace0qq'
/** A DNS-1123 subdomain: what the API server lets a name and a namespace be; nothing in it needs escaping in JSON. */
const DNS_NAME = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/

/** How the texts given to {@link parseManifests} were served since the caches were last emptied. */
export const parseCounts = { exact: 0, generic: 0, parsed: 0 }

/** Empties the parse caches (the start-up snapshot must not carry the renders it warmed up with). */
export function clearParseCache(): void {
  parsed.clear()
  generic.clear()
  seenOnce.clear()
  parseCounts.exact = parseCounts.generic = parseCounts.parsed = 0
}

function touch<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key)
  map.set(key, value)
  if (map.size > PARSE_CACHE_SIZE) map.delete(map.keys().next().value as string)
}

/** Parses one template's output; every problem names the template and the line of its output. */
export function parseManifests(file: string, text: string, renderedFor?: RenderedFor): RenderedObject[] {
  const key = `${file}\0${text}`
  const hit = parsed.get(key)
  if (hit !== undefined) {
    touch(parsed, key, hit)
    parseCounts.exact++
    return JSON.parse(hit) as RenderedObject[]
  }
  const marks = renderedFor !== undefined ? placeholders(text, renderedFor) : undefined
  const genericKey = marks !== undefined ? `${file}\0${marks.generic}` : undefined
  if (marks !== undefined && genericKey !== undefined) {
    const entry = generic.get(genericKey)
    if (entry && entry.plain.every((p) => resolvesAsString(marks.toReal(p))) && entry.keys.every((k) => marks.toReal(k).length <= KEY_LENGTH_LIMIT)) {
      touch(generic, genericKey, entry)
      parseCounts.generic++
      return JSON.parse(marks.toReal(entry.json)) as RenderedObject[]
    }
  }
  parseCounts.parsed++
  const json = JSON.stringify(parseUncached(file, text))
  touch(parsed, key, json)
  if (marks !== undefined && genericKey !== undefined && !generic.has(genericKey)) {
    if (seenOnce.delete(genericKey)) touch(generic, genericKey, genericEntry(marks.generic, json, marks))
    else touch(seenOnce, genericKey, true)
  }
  // The objects as JSON carries them, as every cached answer gives them (what the API server gets).
  return JSON.parse(json) as RenderedObject[]
}

/**
 * Replaces an instance's name and namespace by placeholders (the longer first, so that a name
 * holding its namespace, `default-cache` in `default`, stays one placeholder) and back, in the
 * reverse order. Each replacement is undone exactly when its placeholder is not in its input:
 * undefined when that is not so for this text (nor for the names: a DNS name only).
 */
function placeholders(text: string, r: RenderedFor): { generic: string; toReal(t: string): string } | undefined {
  if (!DNS_NAME.test(r.name) || !DNS_NAME.test(r.namespace)) return undefined
  const steps: [string, string][] = r.name === r.namespace ? [[r.name, NAME_MARK]] : r.name.length >= r.namespace.length ? [[r.name, NAME_MARK], [r.namespace, NAMESPACE_MARK]] : [[r.namespace, NAMESPACE_MARK], [r.name, NAME_MARK]]
  let generic = text
  for (const [real, mark] of steps) {
    if (generic.includes(mark)) return undefined
    generic = generic.replaceAll(real, mark)
  }
  const back = steps.toReversed()
  const toReal = (t: string): string => back.reduce((acc, [real, mark]) => acc.replaceAll(mark, real), t)
  // A placeholder can also be formed across what was replaced and what was not (`qqzname0` before a
  // name `b`): then putting them back does not give the text, and the text is not cached.
  if (toReal(generic) !== text) return undefined
  return { generic, toReal }
}

/** The schema's scalar tests, as the composer's findScalarTagByTest tries them (at a key too: the merge key's). */
const scalarTests = new YAML.Document(null, PARSE).schema.tags.filter((t) => t.default !== false && t.default !== undefined && t.test !== undefined && t.tag !== 'tag:yaml.org,2002:str')

function resolvesAsString(plain: string): boolean {
  return !scalarTests.some((t) => t.test?.test(plain))
}

/** A generic entry for a text parsed as `json` (placeholders put back), or null when the text is unfit. */
function genericEntry(genericText: string, json: string, marks: { toReal(t: string): string }): GenericEntry | null {
  const docs = YAML.parseAllDocuments(genericText, PARSE)
  const plain: string[] = []
  const keys: string[] = []
  const holds = (s: string | undefined | null): boolean => s !== undefined && s !== null && (s.includes(NAME_MARK) || s.includes(NAMESPACE_MARK))
  let fit = true
  for (const doc of docs) {
    if (doc.errors.length > 0) return null
    YAML.visit(doc, {
      Pair(_key, pair) {
        // A collection as a key is written out as text to be a key, wrapped by its length.
        if (pair.key !== null && !YAML.isScalar(pair.key)) fit = false
      },
      // Maps and sequences (the visitor's Scalar takes scalars).
      Node(_key, node) {
        if (holds(node.tag)) fit = false
      },
      Scalar(key, node) {
        // A tag holding a placeholder could name another type for another name (`!!int`).
        if (holds(node.tag)) fit = false
        const [start, end] = node.range ?? [0, 0]
        const source = genericText.slice(start, end)
        // An escape can spell a name where the text does not: as a key, one equal to the name's
        // key for some name (a duplicate). As a value the string is what it spells for every name.
        if (node.type === 'QUOTE_DOUBLE' && source.includes('\\') && (key === 'key' || holds(source) || holds(node.value as string))) fit = false
        if (!holds(typeof node.value === 'string' ? node.value : undefined)) return
        if (key === 'key') keys.push(node.value as string)
        if (node.tag !== undefined) fit = false
        else if (node.type === 'PLAIN') plain.push(node.value as string)
        else if ((node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED') && holds(source.slice(0, Math.max(0, source.indexOf('\n'))))) fit = false
      },
    })
  }
  if (!fit) return null
  let objects: RenderedObject[]
  try {
    objects = objectsOf('', genericText, docs)
  } catch {
    return null
  }
  const genericJson = JSON.stringify(objects)
  if (marks.toReal(genericJson) !== json || !plain.every(resolvesAsString)) return null
  return { json: genericJson, plain, keys }
}

function parseUncached(file: string, text: string): RenderedObject[] {
  return objectsOf(file, text, YAML.parseAllDocuments(text, PARSE))
}

function objectsOf(file: string, text: string, docs: YAML.Document.Parsed[] | YAML.EmptyStream): RenderedObject[] {
  const problems: string[] = []
  const objects: RenderedObject[] = []
  const lines = text.split('\n')
  const where = (line: number | undefined): string => (line ? `${file}: output line ${line}: ${JSON.stringify((lines[line - 1] ?? '').trim())}` : file)
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      // The first error only: the parser's later ones follow from it.
      for (const e of doc.errors.slice(0, 1)) problems.push(`${where(e.linePos?.[0].line)}: ${yamlMessage(e.message)}`)
      continue
    }
    let value: unknown
    try {
      value = yamlData(doc, file, text)
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      problems.push(...err.problems)
      continue
    }
    if (value === null || value === undefined) continue
    const line = doc.contents?.range ? lineAt(text, doc.contents.range[0]) : undefined
    if (!isPlainMap(value)) {
      problems.push(`${where(line)}: a document must be a map, not ${Array.isArray(value) ? 'a list' : typeof value}`)
      continue
    }
    const missing = ['apiVersion', 'kind'].filter((k) => typeof value[k] !== 'string' || value[k] === '')
    const meta = value.metadata
    if (!isPlainMap(meta) || typeof meta.name !== 'string' || meta.name === '') missing.push('metadata.name')
    if (missing.length > 0) {
      problems.push(`${where(line)}: object without ${missing.join(', ')}`)
      continue
    }
    objects.push(value as unknown as RenderedObject)
  }
  if (problems.length > 0) throw new RenderError('yaml', problems)
  return objects
}

/** Kinds in the order they are applied and printed: dependencies first, disruption budgets last. */
export const KIND_ORDER = ['ServiceAccount', 'Secret', 'ConfigMap', 'Service', 'Deployment', 'StatefulSet', 'DaemonSet', 'PodDisruptionBudget']

function kindRank(kind: string): number {
  const i = KIND_ORDER.indexOf(kind)
  // Unknown kinds go after the workloads and before the disruption budget.
  return i === -1 ? KIND_ORDER.length - 1.5 : i
}

/** Sorts in place by kind order, then kind, then name. */
export function sortObjects<T extends { kind: string; metadata: { name: string } }>(objects: T[]): T[] {
  return objects.sort((a, b) => kindRank(a.kind) - kindRank(b.kind) || cmp(a.kind, b.kind) || cmp(a.metadata.name, b.metadata.name))
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/**
 * Stamps an object: the instance's namespace where the template set none, and the standard labels
 * (which win over the template's, since the operator finds its objects by them).
 */
export function stamp(obj: RenderedObject, namespace: string, labels: Record<string, string>): RenderedObject {
  const { name, namespace: ns, labels: own, ...rest } = obj.metadata
  obj.metadata = { name, namespace: ns ?? namespace, labels: { ...(isPlainMap(own) ? (own as Record<string, string>) : {}), ...labels }, ...rest }
  return obj
}


/** Multi-document YAML, each document preceded by a `# Source:` comment like `helm template`. */
export function toYamlStream(items: { source: string; object: unknown }[]): string {
  return items.map(({ source, object }) => `---\n# Source: ${source}\n${yamlText(object)}`).join('')
}

/** A `v1 List` of the objects, as `kubectl get -o json` prints several objects. */
export function toJsonList(objects: unknown[]): string {
  return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects, metadata: {} }, null, 2)}\n`
}

/**
 * YAML text of any value with the project's output conventions (YAML 1.1, no aliases, no folding):
 * plain data through {@link blockYaml}, anything else through the library, which writes the same.
 */
export function yamlText(value: unknown): string {
  return blockYaml(value) ?? YAML.stringify(value, YAML_OUTPUT)
}
