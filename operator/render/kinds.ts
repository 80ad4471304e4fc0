/**
 * The kinds a chart may render, declared in its `kinds.yaml`: the one list the guard, the
 * operator's informers, pruning, `diff --all`, `lint` and the RBAC (`memcached-operator rbac`)
 * all read, so that adding a kind to a chart needs no change to the operator.
 */
import { RenderError } from './errors.ts'
import { isPlainMap } from './values.ts'
import { covers, formatPath, NEVER_PATCHED_PATHS, parsePath, PathSyntaxError, type Segment } from './overlay-paths.ts'

/** A kind a chart may render, with its REST resource (the RBAC rules grant exactly these). */
export interface ChartKind {
  /** `v1` or `<group>/<version>`. */
  apiVersion: string
  kind: string
  /** The plural resource name in URLs and RBAC rules, e.g. `deployments`. */
  resource: string
  /**
   * Applied only when the cluster serves it (e.g. a CRD that may not be installed): otherwise the
   * rest of the render is applied and the CR's `OptionalKindsServed` condition says what was not.
   */
  optional: boolean
  /**
   * The paths (and everything under them) that overlays may change in objects of this kind, parsed
   * (overlay-paths.ts); empty or absent: overlays may not touch this kind.
   */
  patchable?: readonly Segment[][]
}

/** The file beside Chart.yaml. */
export const KINDS_FILE = 'kinds.yaml'

const KEYS = new Set(['apiVersion', 'kind', 'resource', 'optional', 'patchable'])
// A group is a DNS subdomain (apimachinery's IsDNS1123Subdomain); a version a DNS label
// (apiextensions' validation of a CRD's versions, e.g. v1, v1beta1).
const GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const VERSION = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
// A CRD's names.kind must be a DNS-1035 label once lowercased, and is CamelCase by convention;
// names.plural must be a DNS-1035 label (apiextensions validation.go ValidateCustomResourceDefinitionNames).
const KIND = /^[A-Z][A-Za-z0-9]*$/
const RESOURCE = /^[a-z]([-a-z0-9]*[a-z0-9])?$/

/** The group of an apiVersion (`''` for the core group). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/')
  return slash === -1 ? '' : apiVersion.slice(0, slash)
}

/** `apiVersion/kind`: how a kind is keyed wherever the operator keeps something per kind. */
export function kindKey(obj: { apiVersion: string; kind: string }): string {
  return `${obj.apiVersion}/${obj.kind}`
}

function apiVersionProblem(v: string): string | undefined {
  const parts = v.split('/')
  if (parts.length === 1) return v === 'v1' ? undefined : 'the core group has only version v1; other groups are written <group>/<version>'
  if (parts.length !== 2 || !GROUP.test(parts[0]!) || parts[0]!.length > 253 || !VERSION.test(parts[1]!) || parts[1]!.length > 63) return 'must be <group>/<version>, e.g. apps/v1'
  return undefined
}

/**
 * Parses and checks a kinds.yaml already read as data: `{ kinds: [{ apiVersion, kind, resource,
 * optional? }] }`. Every problem is listed, each with the file and the entry's index.
 * @throws RenderError ('input')
 */
export function parseKinds(data: unknown, file: string): ChartKind[] {
  const problems: string[] = []
  if (!isPlainMap(data)) throw new RenderError('input', [`${file}: must be a map with a list "kinds"`])
  for (const key of Object.keys(data)) if (key !== 'kinds') problems.push(`${file}: unknown key ${JSON.stringify(key)} (only "kinds" is allowed)`)
  const list = data.kinds
  if (!Array.isArray(list) || list.length === 0) {
    problems.push(`${file}: kinds: must be a non-empty list`)
    throw new RenderError('input', problems)
  }
  const kinds: ChartKind[] = []
  const seenKind = new Map<string, number>()
  const seenResource = new Map<string, number>()
  list.forEach((entry: unknown, i) => {
    const at = `${file}: kinds[${i}]`
    if (!isPlainMap(entry)) {
      problems.push(`${at}: must be a map with apiVersion, kind and resource`)
      return
    }
    const before = problems.length
    for (const key of Object.keys(entry)) if (!KEYS.has(key)) problems.push(`${at}: unknown key ${JSON.stringify(key)} (allowed: ${[...KEYS].join(', ')})`)
    for (const key of ['apiVersion', 'kind', 'resource']) {
      if (!(key in entry)) problems.push(`${at}: ${key} is required`)
      else if (typeof entry[key] !== 'string') problems.push(`${at}: ${key} must be a string`)
    }
    if ('optional' in entry && typeof entry.optional !== 'boolean') problems.push(`${at}: optional must be true or false`)
    const patchable = patchableOf(entry.patchable, `${at}: patchable`, problems)
    if (problems.length > before) return
    const { apiVersion, kind, resource } = entry as { apiVersion: string; kind: string; resource: string }
    const badVersion = apiVersionProblem(apiVersion)
    if (badVersion) problems.push(`${at}: apiVersion ${JSON.stringify(apiVersion)}: ${badVersion}`)
    if (!KIND.test(kind) || kind.length > 63) problems.push(`${at}: kind ${JSON.stringify(kind)}: must be CamelCase letters and digits, e.g. Deployment`)
    if (!RESOURCE.test(resource) || resource.length > 63) problems.push(`${at}: resource ${JSON.stringify(resource)}: must be the lowercase plural resource name, e.g. deployments`)
    if (problems.length > before) return
    const group = groupOf(apiVersion)
    const k = `${group}/${kind}`
    const r = `${group}/${resource}`
    const first = seenKind.get(k) ?? seenResource.get(r)
    if (first !== undefined) {
      problems.push(`${at}: duplicate of kinds[${first}] (${kind} in group ${JSON.stringify(group)}, resource ${resource}): each kind is declared once`)
      return
    }
    seenKind.set(k, i)
    seenResource.set(r, i)
    kinds.push({ apiVersion, kind, resource, optional: entry.optional === true, patchable })
  })
  if (problems.length > 0) throw new RenderError('input', problems)
  return kinds
}

/** A kind's `patchable` list: each a path overlays may change, none within what is never patched. */
function patchableOf(value: unknown, at: string, problems: string[]): Segment[][] {
  if (value === undefined) return []
  if (!Array.isArray(value)) {
    problems.push(`${at}: must be a list of paths, e.g. spec.template.spec.tolerations`)
    return []
  }
  const out: Segment[][] = []
  value.forEach((p: unknown, i) => {
    if (typeof p !== 'string') return problems.push(`${at}[${i}]: must be a path (a string)`)
    let path: Segment[]
    try {
      path = parsePath(p)
    } catch (err) {
      if (!(err instanceof PathSyntaxError)) throw err
      return problems.push(`${at}[${i}]: ${err.message}`)
    }
    const never = NEVER_PATCHED_PATHS.find((n) => covers(n, path))
    if (never) return problems.push(`${at}[${i}]: ${p} is within ${formatPath(never)}, which no overlay may change`)
    out.push(path)
  })
  return out
}
