/**
 * Overlays: last-mile patches of the objects a chart rendered, in kustomize's vocabulary (a target,
 * and a strategic merge patch or an RFC 6902 JSON patch), bounded by the chart. They run in the
 * render between the templates and the guard, so that the operator, `render`, `diff` and `lint`
 * see the same objects: first the platform's overlays (`run --overlays`), then the CR's own
 * (`spec.overlays`).
 *
 * An overlay is data: its size and depth are bounded, no key may reach a prototype, a target names
 * only kinds the chart renders in the CR's namespace, and every field it changes must lie within
 * what the chart declares patchable for the kind (kinds.yaml) and outside what no overlay may ever
 * change (overlay-paths.ts). Any problem fails the render as a whole, so nothing is applied.
 */
import jsonpatch from 'fast-json-patch'
import { kindPatchMeta } from '../kube/openapi-patch-meta.ts'
import { strategicMergePatch, StrategicPatchError, type JsonObject } from '../kube/strategic-merge.ts'
import { RenderError } from './errors.ts'
import { groupOf, type ChartKind } from './kinds.ts'
import type { RenderedObject } from './manifest.ts'
import { changedPaths, covers, formatPath, jsonPatchScope, NEVER_PATCHED_PATHS, strategicScope, touches } from './overlay-paths.ts'
import { MAX_JSON_PATCH_OPS, MAX_OVERLAY_BYTES, MAX_OVERLAY_DEPTH, MAX_OVERLAYS, PROTOTYPE_KEYS } from './overlay-schema.ts'
import { matchesSelector, parseSelector, type Requirement } from './overlay-selector.ts'
import { isPlainMap } from './values.ts'

/** Which objects an overlay patches: every field given must match. */
export interface OverlayTarget {
  group?: string
  version?: string
  kind?: string
  name?: string
  namespace?: string
  labelSelector?: Requirement[]
}

/** One JSON patch operation. */
export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test'
  path: string
  from?: string
  value?: unknown
}

/** A checked overlay. */
export interface Overlay {
  /** How messages name it: `spec.overlays[0] (tolerations)`. */
  who: string
  target: OverlayTarget
  strategicMerge?: JsonObject
  jsonPatch?: JsonPatchOperation[]
}

/** What one overlay changed in one object. */
export interface OverlayChange {
  overlay: string
  /** `Kind/name`. */
  object: string
  /** The fields it changed, as overlay-paths.ts writes them. */
  paths: string[]
}

const OVERLAY_KEYS = new Set(['name', 'target', 'strategicMerge', 'jsonPatch'])
const TARGET_KEYS = ['group', 'version', 'kind', 'name', 'namespace', 'labelSelector'] as const
const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test'])

/** The first key of `v` (at any depth) that reaches a prototype, or too deep a nesting, as a problem. */
function shapeProblem(v: unknown, at: string, depth = 0): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined
  if (depth >= MAX_OVERLAY_DEPTH) return `${at}: nested deeper than ${MAX_OVERLAY_DEPTH} levels`
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) {
      const p = shapeProblem(x, `${at}[${i}]`, depth + 1)
      if (p) return p
    }
    return undefined
  }
  for (const k of Object.keys(v)) {
    if (PROTOTYPE_KEYS.includes(k)) return `${at}: key ${JSON.stringify(k)} is not allowed`
    const p = shapeProblem((v as Record<string, unknown>)[k], `${at}.${k}`, depth + 1)
    if (p) return p
  }
  return undefined
}

/**
 * Checks overlays given as data (`spec.overlays`, or the list of a platform's file), each named
 * `<where>[i]`. Every problem is listed.
 * @throws RenderError ('values')
 */
export function parseOverlays(value: unknown, where: string): Overlay[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw new RenderError('values', [`${where}: must be a list of overlays`])
  if (value.length > MAX_OVERLAYS) throw new RenderError('values', [`${where}: at most ${MAX_OVERLAYS} overlays, not ${value.length}`])
  const problems: string[] = []
  const out: Overlay[] = []
  value.forEach((raw: unknown, i) => {
    const at = `${where}[${i}]`
    const before = problems.length
    const shape = shapeProblem(raw, at)
    if (shape) return problems.push(shape)
    const bytes = Buffer.byteLength(JSON.stringify(raw) ?? '')
    if (bytes > MAX_OVERLAY_BYTES) return problems.push(`${at}: ${bytes} bytes of JSON, more than the ${MAX_OVERLAY_BYTES} an overlay may have`)
    if (!isPlainMap(raw)) return problems.push(`${at}: must be a map with a target and strategicMerge or jsonPatch`)
    for (const k of Object.keys(raw)) if (!OVERLAY_KEYS.has(k)) problems.push(`${at}: unknown key ${JSON.stringify(k)} (allowed: ${[...OVERLAY_KEYS].join(', ')})`)
    if (raw.name !== undefined && (typeof raw.name !== 'string' || raw.name.length > 63)) problems.push(`${at}.name: must be a string of at most 63 characters`)
    const who = typeof raw.name === 'string' ? `${at} (${raw.name})` : at
    const hasSmp = raw.strategicMerge !== undefined
    const hasJson = raw.jsonPatch !== undefined
    if (hasSmp === hasJson) problems.push(`${at}: exactly one of strategicMerge and jsonPatch is required`)
    if (hasSmp && !isPlainMap(raw.strategicMerge)) problems.push(`${at}.strategicMerge: must be a map (a strategic merge patch)`)
    if (hasJson) checkJsonPatch(raw.jsonPatch, `${at}.jsonPatch`, problems)
    const target = targetOf(raw.target, raw.strategicMerge, hasJson, `${at}.target`, problems)
    if (problems.length > before) return
    out.push({ who, target: target!, ...(hasSmp ? { strategicMerge: raw.strategicMerge as JsonObject } : { jsonPatch: raw.jsonPatch as JsonPatchOperation[] }) })
  })
  if (problems.length > 0) throw new RenderError('values', problems)
  return out
}

function checkJsonPatch(ops: unknown, at: string, problems: string[]): void {
  if (!Array.isArray(ops) || ops.length === 0) return void problems.push(`${at}: must be a non-empty list of operations`)
  if (ops.length > MAX_JSON_PATCH_OPS) return void problems.push(`${at}: at most ${MAX_JSON_PATCH_OPS} operations, not ${ops.length}`)
  ops.forEach((op: unknown, j) => {
    if (!isPlainMap(op)) return problems.push(`${at}[${j}]: must be a map with op and path`)
    for (const k of Object.keys(op)) if (!['op', 'path', 'from', 'value'].includes(k)) problems.push(`${at}[${j}]: unknown key ${JSON.stringify(k)}`)
    if (typeof op.op !== 'string' || !OPS.has(op.op)) problems.push(`${at}[${j}].op: must be one of ${[...OPS].join(', ')}`)
    for (const k of ['path', 'from'] as const) {
      if (op[k] === undefined && k === 'from' && op.op !== 'move' && op.op !== 'copy') continue
      const pointer = op[k]
      if (typeof pointer !== 'string' || !/^(\/.*)?$/.test(pointer)) problems.push(`${at}[${j}].${k}: must be a JSON pointer, e.g. /spec/template/spec/tolerations`)
      else {
        const bad = pointer.split('/').map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~')).find((t) => PROTOTYPE_KEYS.includes(t))
        if (bad !== undefined) problems.push(`${at}[${j}].${k}: ${JSON.stringify(bad)} is not allowed in a path`)
      }
    }
    if ((op.op === 'add' || op.op === 'replace' || op.op === 'test') && !Object.hasOwn(op, 'value')) problems.push(`${at}[${j}].value: is required by ${op.op}`)
  })
}

function targetOf(raw: unknown, smp: unknown, json: boolean, at: string, problems: string[]): OverlayTarget | undefined {
  if (raw === undefined) {
    // kustomize: a strategic merge patch without a target names its object itself.
    const meta = isPlainMap(smp) ? smp.metadata : undefined
    if (!json && isPlainMap(smp) && typeof smp.apiVersion === 'string' && typeof smp.kind === 'string' && isPlainMap(meta) && typeof meta.name === 'string') {
      const slash = smp.apiVersion.indexOf('/')
      return { group: slash === -1 ? '' : smp.apiVersion.slice(0, slash), version: smp.apiVersion.slice(slash + 1), kind: smp.kind, name: meta.name }
    }
    problems.push(`${at}: is required (a strategic merge patch without one must name apiVersion, kind and metadata.name)`)
    return undefined
  }
  if (!isPlainMap(raw)) return void problems.push(`${at}: must be a map of ${TARGET_KEYS.join(', ')}`)
  const out: OverlayTarget = {}
  for (const k of Object.keys(raw)) {
    if (!(TARGET_KEYS as readonly string[]).includes(k)) {
      problems.push(`${at}: unknown key ${JSON.stringify(k)} (allowed: ${TARGET_KEYS.join(', ')})`)
      continue
    }
    const v = raw[k]
    if (typeof v !== 'string') {
      problems.push(`${at}.${k}: must be a string`)
      continue
    }
    if (k === 'labelSelector') {
      try {
        out.labelSelector = parseSelector(v)
      } catch (err) {
        problems.push(`${at}.labelSelector: ${(err as Error).message}`)
      }
    } else out[k as Exclude<(typeof TARGET_KEYS)[number], 'labelSelector'>] = v
  }
  return out
}

function targetText(t: OverlayTarget): string {
  const parts = Object.entries(t).map(([k, v]) => `${k}=${k === 'labelSelector' ? (v as Requirement[]).map((r) => r.text).join(',') : String(v)}`)
  return parts.length > 0 ? parts.join(' ') : 'every object'
}

function matches(t: OverlayTarget, o: RenderedObject): boolean {
  const slash = o.apiVersion.indexOf('/')
  if (t.group !== undefined && t.group !== groupOf(o.apiVersion)) return false
  if (t.version !== undefined && t.version !== o.apiVersion.slice(slash + 1)) return false
  if (t.kind !== undefined && t.kind !== o.kind) return false
  if (t.name !== undefined && t.name !== o.metadata.name) return false
  if (t.labelSelector !== undefined && !matchesSelector(t.labelSelector, o.metadata.labels ?? {})) return false
  return true
}

function errorText(err: unknown): string {
  const e = err as { name?: string; index?: number; operation?: { op?: string; path?: string }; message?: string }
  if (err instanceof StrategicPatchError) return err.message
  const first = String(e.message ?? err).split('\n')[0]!
  if (e.index === undefined) return first
  const op = e.operation ? ` (${e.operation.op} ${e.operation.path})` : ''
  if (e.name === 'TEST_OPERATION_FAILED') return `jsonPatch[${e.index}]${op}: the test failed: the value differs`
  return `jsonPatch[${e.index}]${op}: ${first}`
}

/**
 * Applies overlays in order to an instance's objects (each sees what the ones before it did) and
 * returns what each changed. The objects are replaced in `objects` only when every overlay applied
 * within its bounds; otherwise nothing is changed.
 * @throws RenderError ('values') naming each overlay, target and path at fault
 */
export function applyOverlays(objects: RenderedObject[], overlays: readonly Overlay[], namespace: string, kinds: readonly ChartKind[]): OverlayChange[] {
  if (overlays.length === 0) return []
  const problems: string[] = []
  const changes: OverlayChange[] = []
  // Each patch gives a fresh object and leaves the one it patched as it was.
  const work = [...objects]
  for (const ov of overlays) {
    const t = ov.target
    if (t.namespace !== undefined && t.namespace !== namespace) {
      problems.push(`${ov.who}: target namespace ${JSON.stringify(t.namespace)} is not the instance's namespace ${JSON.stringify(namespace)}`)
      continue
    }
    const declared = kinds.filter((k) => (t.kind === undefined || k.kind === t.kind) && (t.group === undefined || groupOf(k.apiVersion) === t.group) && (t.version === undefined || k.apiVersion.endsWith(`/${t.version}`) || k.apiVersion === t.version))
    if (t.kind !== undefined && declared.length === 0) {
      problems.push(`${ov.who}: target kind ${JSON.stringify(t.kind)}${t.group !== undefined ? ` in group ${JSON.stringify(t.group)}` : ''} is not one the chart renders (kinds.yaml: ${kinds.map((k) => k.kind).join(', ')}); an overlay patches only the instance's own objects`)
      continue
    }
    const hits = work.map((o, i) => [o, i] as const).filter(([o]) => matches(t, o))
    if (hits.length === 0) {
      problems.push(`${ov.who}: target ${targetText(t)} matches no rendered object`)
      continue
    }
    for (const [o, i] of hits) {
      const id = `${o.kind}/${o.metadata.name}`
      const meta = kindPatchMeta(o.apiVersion, o.kind)
      let patched: RenderedObject
      try {
        patched = ov.strategicMerge !== undefined
          ? (strategicMergePatch(o as unknown as JsonObject, ov.strategicMerge, meta) as unknown as RenderedObject)
          : (jsonpatch.applyPatch(JSON.parse(JSON.stringify(o)) as RenderedObject, ov.jsonPatch as jsonpatch.Operation[], true, true, true).newDocument)
      } catch (err) {
        if (err instanceof StrategicPatchError || err instanceof jsonpatch.JsonPatchError || err instanceof TypeError) {
          problems.push(`${ov.who}: target ${id}: ${errorText(err)}`)
          continue
        }
        throw err
      }
      const found = changedPaths(o, patched, meta, ov.strategicMerge !== undefined ? strategicScope(ov.strategicMerge) : jsonPatchScope(ov.jsonPatch!))
      const patchable = kinds.find((k) => k.kind === o.kind && k.apiVersion === o.apiVersion)?.patchable ?? []
      const before = problems.length
      for (const c of found) {
        const path = formatPath(c.path)
        const never = NEVER_PATCHED_PATHS.find((n) => touches(c, n))
        if (never) problems.push(`${ov.who}: target ${id}: ${path}: no overlay may change ${formatPath(never)}`)
        else if (!patchable.some((p) => covers(p, c.path))) problems.push(`${ov.who}: target ${id}: ${path}: the chart does not declare it patchable for ${o.kind} (kinds.yaml patchable: ${patchable.length > 0 ? patchable.map(formatPath).join(', ') : 'none'})`)
      }
      if (problems.length > before) continue
      work[i] = patched
      if (found.length > 0) changes.push({ overlay: ov.who, object: id, paths: found.map((c) => formatPath(c.path)).sort() })
    }
  }
  if (problems.length > 0) throw new RenderError('values', problems)
  for (const [i, o] of work.entries()) objects[i] = o
  return changes
}

/** An overlay of the platform's file: for every Memcached, or those whose labels its `memcachedSelector` matches. */
export interface PlatformOverlay extends Overlay {
  memcachedSelector?: Requirement[]
}

/**
 * The platform's overlays file as data: `{ overlays: [ … ] }`, each overlay as in a CR, plus an
 * optional `memcachedSelector` (a label selector of the Memcacheds it applies to).
 * @throws RenderError ('input') naming the file
 */
export function parsePlatformOverlays(data: unknown, file: string): PlatformOverlay[] {
  if (!isPlainMap(data) || Object.keys(data).some((k) => k !== 'overlays')) throw new RenderError('input', [`${file}: must be a map with one key, overlays (a list)`])
  const list = data.overlays
  const selectors: (Requirement[] | undefined)[] = []
  const problems: string[] = []
  const stripped = Array.isArray(list)
    ? list.map((o: unknown, i) => {
        if (!isPlainMap(o) || !Object.hasOwn(o, 'memcachedSelector')) return selectors.push(undefined), o
        const { memcachedSelector, ...rest } = o
        try {
          if (typeof memcachedSelector !== 'string') throw new Error('must be a label selector (a string)')
          selectors.push(parseSelector(memcachedSelector))
        } catch (err) {
          problems.push(`${file}: overlays[${i}].memcachedSelector: ${(err as Error).message}`)
        }
        return rest
      })
    : list
  let parsed: Overlay[] = []
  try {
    parsed = parseOverlays(stripped, `${file}: overlays`)
  } catch (err) {
    if (!(err instanceof RenderError)) throw err
    problems.push(...err.problems)
  }
  if (problems.length > 0) throw new RenderError('input', problems)
  return parsed.map((o, i) => (selectors[i] ? { ...o, memcachedSelector: selectors[i] } : o))
}

/** The platform's overlays that apply to a Memcached with these labels. */
export function platformOverlaysFor(overlays: readonly PlatformOverlay[], labels: Readonly<Record<string, string>>): Overlay[] {
  return overlays.filter((o) => o.memcachedSelector === undefined || matchesSelector(o.memcachedSelector, labels))
}
