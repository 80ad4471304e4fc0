/**
 * From template output to objects and back: YAML 1.1 parsing (what Kubernetes reads) with
 * duplicate keys rejected, stamping of namespace and standard labels, deterministic ordering, and
 * the YAML/JSON text the CLI prints.
 */
import YAML from 'yaml'
import { firstLine, lineAt, RenderError } from './errors.ts'
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

/** Empties the parse cache (the start-up snapshot must not carry the renders it warmed up with). */
export function clearParseCache(): void {
  parsed.clear()
}

/** Parses one template's output; every problem names the template and the line of its output. */
export function parseManifests(file: string, text: string): RenderedObject[] {
  const key = `${file}\0${text}`
  const hit = parsed.get(key)
  if (hit !== undefined) {
    parsed.delete(key)
    parsed.set(key, hit)
    return JSON.parse(hit) as RenderedObject[]
  }
  const objects = parseUncached(file, text)
  parsed.set(key, JSON.stringify(objects))
  if (parsed.size > PARSE_CACHE_SIZE) parsed.delete(parsed.keys().next().value as string)
  return objects
}

function parseUncached(file: string, text: string): RenderedObject[] {
  const docs = YAML.parseAllDocuments(text, PARSE)
  const problems: string[] = []
  const objects: RenderedObject[] = []
  const lines = text.split('\n')
  const where = (line: number | undefined): string => (line ? `${file}: output line ${line}: ${JSON.stringify((lines[line - 1] ?? '').trim())}` : file)
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      for (const e of doc.errors) problems.push(`${where(e.linePos?.[0].line)}: ${firstLine(e.message)}`)
      continue
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 })
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
