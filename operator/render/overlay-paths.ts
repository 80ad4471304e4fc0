/**
 * Field paths of an object as overlays see them: what a patch changed (found by comparing the object
 * before and after it, list items matched by their strategic merge key, so that a JSON patch by
 * index and a strategic merge patch by key name the same field), what a chart declares patchable
 * in kinds.yaml, and what no overlay may ever change.
 *
 * A path is written `spec.template.spec.containers[name=memcached].image`: a field name, `.`
 * between fields, `["a.b/c"]` for a name that is not plain, `[key=value]` for an item of a list
 * merged by key, `[3]` for an item of any other list; a declaration may write `[*]` for any item.
 */
import { fieldMeta, sliceMeta, type PatchMeta } from '../kube/strategic-merge.ts'

/** One step of a path. */
export type Segment = { field: string } | { item: '*' } | { item: number } | { item: string; key: string }

/** A path that cannot be read (where it was written is the caller's to say). */
export class PathSyntaxError extends Error {
  override name = 'PathSyntaxError'
}

const PLAIN = /^[A-Za-z0-9_-]+$/

/** Parses a written path (see the module's comment). */
export function parsePath(text: string): Segment[] {
  const out: Segment[] = []
  let i = 0
  const fail = (why: string): never => {
    throw new PathSyntaxError(`${JSON.stringify(text)}: ${why} at character ${i + 1}`)
  }
  while (i < text.length) {
    if (text[i] === '[') {
      const close = text.indexOf(']', i)
      if (text[i + 1] === '"') {
        const m = /^\["((?:[^"\\]|\\.)*)"\]/.exec(text.slice(i))
        if (!m) fail('an unterminated ["name"]')
        out.push({ field: JSON.parse(`"${m![1]}"`) as string })
        i += m![0].length
      } else {
        if (close === -1) fail('an unterminated [')
        const inner = text.slice(i + 1, close)
        if (out.length === 0) fail('a list item before any field')
        if (inner === '*') out.push({ item: '*' })
        else if (/^\d+$/.test(inner)) out.push({ item: Number(inner) })
        else {
          const m = /^([A-Za-z0-9_-]+)=(.+)$/.exec(inner)
          if (!m) fail('a list item is [*], [index] or [key=value]')
          out.push({ key: m![1]!, item: m![2]! })
        }
        i = close + 1
      }
      if (i < text.length && text[i] !== '.' && text[i] !== '[') fail('"." or "[" expected')
      if (text[i] === '.') i++
      continue
    }
    const m = /^[A-Za-z0-9_-]+/.exec(text.slice(i))
    if (!m) fail('a field name expected')
    out.push({ field: m![0] })
    i += m![0].length
    if (i < text.length && text[i] !== '.' && text[i] !== '[') fail('"." or "[" expected')
    if (text[i] === '.') {
      i++
      if (i === text.length) fail('a field name expected')
    }
  }
  if (out.length === 0) throw new PathSyntaxError('an empty path')
  return out
}

/** Writes a path as {@link parsePath} reads it. */
export function formatPath(path: readonly Segment[]): string {
  let s = ''
  for (const seg of path) {
    if ('field' in seg) s += PLAIN.test(seg.field) ? `${s === '' ? '' : '.'}${seg.field}` : `[${JSON.stringify(seg.field)}]`
    else if ('key' in seg) s += `[${seg.key}=${seg.item}]`
    else s += `[${seg.item}]`
  }
  return s
}

function segmentMatches(pattern: Segment, actual: Segment): boolean {
  if ('field' in pattern) return 'field' in actual && actual.field === pattern.field
  if ('field' in actual) return false
  if (pattern.item === '*') return true
  if ('key' in pattern) return 'key' in actual && actual.key === pattern.key && actual.item === pattern.item
  return !('key' in actual) && actual.item === pattern.item
}

/** Whether `prefix` (a declaration, `[*]` allowed) covers `path`: it is `path` or one of its ancestors. */
export function covers(prefix: readonly Segment[], path: readonly Segment[]): boolean {
  return prefix.length <= path.length && prefix.every((p, i) => segmentMatches(p, path[i]!))
}

/** A field a patch changed: its path, and its value before and after (undefined: absent). */
export interface Change {
  path: Segment[]
  before: unknown
  after: unknown
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => jsonEqual(x, (b as unknown[])[i]))
  const ka = Object.keys(a)
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

/**
 * Every field that differs between `before` and `after`, at its finest: maps are compared key by
 * key, lists merged by a key (per `meta`) item by item; any other list, and a value whose type
 * changed, is one change.
 */
export function changedPaths(before: unknown, after: unknown, meta: PatchMeta, scope: Scope = true): Change[] {
  const out: Change[] = []
  walk(before, after, meta, [], out, scope)
  return out
}

/**
 * Where a patch can have changed anything: `true` everywhere below, or only under the keys of a
 * map (each with its own scope). The rest of an object is not compared.
 */
export type Scope = true | { [key: string]: Scope }

/** The scope of a strategic merge patch: its keys, and everything under a map holding a directive. */
export function strategicScope(patch: unknown): Scope {
  if (!isMap(patch) || Object.keys(patch).some((k) => k.startsWith('$'))) return true
  const out: { [key: string]: Scope } = Object.create(null) as { [key: string]: Scope }
  for (const [k, v] of Object.entries(patch)) out[k] = strategicScope(v)
  return out
}

/** The scope of JSON patch operations: the top-level fields their paths (and `from`s) name. */
export function jsonPatchScope(ops: readonly { path: string; from?: string }[]): Scope {
  const out: { [key: string]: Scope } = Object.create(null) as { [key: string]: Scope }
  for (const p of ops.flatMap((o) => (o.from !== undefined ? [o.path, o.from] : [o.path]))) {
    const first = p.split('/')[1]
    if (first === undefined) return true
    out[first.replaceAll('~1', '/').replaceAll('~0', '~')] = true
  }
  return out
}

function walk(before: unknown, after: unknown, meta: PatchMeta, path: Segment[], out: Change[], scope: Scope = true): void {
  if (before === after) return
  if (!isMap(before) || !isMap(after)) {
    if (!jsonEqual(before, after)) out.push({ path, before, after })
    return
  }
  const keys = scope === true ? new Set([...Object.keys(before), ...Object.keys(after)]) : Object.keys(scope)
  for (const k of keys) {
    const b = Object.hasOwn(before, k) ? before[k] : undefined
    const a = Object.hasOwn(after, k) ? after[k] : undefined
    // A strategic merge drops nulls, as the API server's typed decoding does: not a change.
    if (b === null && a === undefined) continue
    const here = [...path, { field: k }]
    if (Array.isArray(b) && Array.isArray(a)) {
      const list = sliceMeta(meta, k)
      const key = list.mergeKey
      const keyed = (l: unknown[]): Map<string, unknown> | undefined => {
        if (!list.merge || key === '') return undefined
        const m = new Map<string, unknown>()
        for (const x of l) {
          if (!isMap(x) || (typeof x[key] !== 'string' && typeof x[key] !== 'number') || m.has(String(x[key]))) return undefined
          m.set(String(x[key]), x)
        }
        return m
      }
      const kb = keyed(b)
      const ka = keyed(a)
      if (kb && ka) {
        for (const id of new Set([...kb.keys(), ...ka.keys()])) walk(kb.get(id), ka.get(id), list.items, [...here, { key, item: id }], out)
        if (!jsonEqual([...kb.keys()].filter((x) => ka.has(x)), [...ka.keys()].filter((x) => kb.has(x)))) out.push({ path: here, before: b, after: a })
        continue
      }
    }
    walk(b, a, fieldMeta(meta, k), here, out, scope === true ? true : scope[k]!)
  }
}

/** The value at `path` inside `v` (undefined when a step is absent). */
export function valueAt(v: unknown, path: readonly Segment[]): unknown {
  let cur = v
  for (const seg of path) {
    if ('field' in seg) {
      if (!isMap(cur) || !Object.hasOwn(cur, seg.field)) return undefined
      cur = cur[seg.field]
    } else {
      if (!Array.isArray(cur)) return undefined
      if ('key' in seg) cur = cur.find((x) => isMap(x) && String(x[seg.key]) === seg.item)
      else if (seg.item === '*') return cur.length > 0 ? cur : undefined
      else cur = cur[seg.item]
    }
  }
  return cur
}

/** Whether any value matches `path` (with `[*]`) inside `v`. */
export function holdsPath(v: unknown, path: readonly Segment[]): boolean {
  if (path.length === 0) return v !== undefined
  const [seg, ...rest] = path as [Segment, ...Segment[]]
  if ('field' in seg) return isMap(v) && Object.hasOwn(v, seg.field) && holdsPath(v[seg.field], rest)
  if (!Array.isArray(v)) return false
  if (seg.item === '*') return v.some((x) => holdsPath(x, rest))
  return holdsPath(valueAt(v, [seg]), rest)
}

/** Whether `pattern` (with `[*]`) matches the first `path.length` steps of itself: `path` lies above it. */
function above(path: readonly Segment[], pattern: readonly Segment[]): boolean {
  return path.length < pattern.length && path.every((p, i) => segmentMatches(pattern[i]!, p))
}

/**
 * Whether a change touches what `pattern` names: the change is at or under it, or above it with
 * something at the pattern's place before or after (replacing a whole container that has a
 * securityContext touches its securityContext).
 */
export function touches(change: Change, pattern: readonly Segment[]): boolean {
  if (covers(pattern, change.path)) return true
  if (!above(change.path, pattern)) return false
  const rest = pattern.slice(change.path.length)
  return holdsPath(change.before, rest) || holdsPath(change.after, rest)
}

const STANDARD_LABEL_KEYS = ['name', 'instance', 'version', 'component', 'part-of', 'managed-by'].map((k) => `["app.kubernetes.io/${k}"]`)
const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers']

/**
 * What no overlay may change, whatever the chart declares: the object's identity and owner stamp
 * (kind, name, namespace, ownerReferences, the standard labels the operator finds its objects by,
 * the workload's selector) and the secure pod defaults (the pod's and every container's
 * securityContext, the host namespaces, host paths and ports, the service account and its token).
 */
export const NEVER_PATCHED: readonly string[] = [
  'apiVersion',
  'kind',
  'metadata.name',
  'metadata.namespace',
  'metadata.ownerReferences',
  'metadata.finalizers',
  'metadata.managedFields',
  ...STANDARD_LABEL_KEYS.map((k) => `metadata.labels${k}`),
  'spec.selector',
  ...STANDARD_LABEL_KEYS.map((k) => `spec.template.metadata.labels${k}`),
  'spec.template.spec.securityContext',
  'spec.template.spec.hostNetwork',
  'spec.template.spec.hostPID',
  'spec.template.spec.hostIPC',
  'spec.template.spec.hostUsers',
  'spec.template.spec.serviceAccountName',
  'spec.template.spec.serviceAccount',
  'spec.template.spec.automountServiceAccountToken',
  'spec.template.spec.volumes[*].hostPath',
  ...CONTAINER_LISTS.flatMap((l) => [`spec.template.spec.${l}[*].securityContext`, `spec.template.spec.${l}[*].ports[*].hostPort`, `spec.template.spec.${l}[*].ports[*].hostIP`]),
]

/** {@link NEVER_PATCHED}, parsed. */
export const NEVER_PATCHED_PATHS: readonly (readonly Segment[])[] = NEVER_PATCHED.map(parsePath)
