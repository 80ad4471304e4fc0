/**
 * Drift modes of one Memcached (`spec.drift`, an operator-owned spec field: render/spec-fields.ts),
 * after Flux helm-controller's `spec.driftDetection`
 * (https://fluxcd.io/flux/components/helm/helmreleases/#drift-detection: `mode: enabled | warn |
 * disabled`, `ignore: [{ paths: [JSON pointers], target: {kind, name, …} }]`):
 *
 * - `correct` (the default): a field another manager changed is applied back at the next reconcile;
 * - `warn`: it is left as it is and reported — the Drifted condition, a Warning event and a log
 *   line name the object, the field and the field manager that owns it now;
 * - `ignore`: the listed paths are never corrected, in either mode.
 *
 * Both work on the rendered object before it is diffed and applied, where the render is not to
 * win: a path the operator's managedFields entry still owns takes the live value (the apply keeps
 * it, and owns it still); a path somebody else took over is left out of the apply (server-side
 * apply leaves another manager's field alone, and the operator does not take it back — it would
 * then count as its own, and a later reconcile would correct it). Which changed
 * field is drift is told by server-side apply's ownership (the API server's managedFields): a
 * manager that changes a field the operator applied takes it over (an update), so a differing value
 * the operator's entry no longer owns was set by somebody else; one it still owns is a new render
 * (a spec or chart change), which is applied in every mode. A field somebody removed looks like one
 * a new render adds (neither is owned), so `warn` puts a removed field back (docs/operator.md).
 */
import type { KubeObject } from '../controller/client.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { appliedFields, diffObject, FIELD_MANAGER } from './diff.ts'
import { isMap, keySegment, listMapKeys, type JsonMap } from './normalize.ts'
import { describeObject } from './owner.ts'
import type { Logger } from 'pino'
import type { Memcached } from '../api/memcached.ts'
import { CONDITION_TYPES, findCondition, REASONS, type ConditionInput } from './conditions.ts'

/** A CR's drift settings (`spec.drift`). */
export interface DriftSpec {
  mode: 'correct' | 'warn'
  ignore: { paths: string[]; target?: { kind?: string; name?: string } }[]
}

/** The drift settings of a spec, or undefined when it has none (correct, nothing ignored). */
export function driftSpecOf(spec: unknown): DriftSpec | undefined {
  const drift = isMap(spec) ? spec.drift : undefined
  if (!isMap(drift)) return undefined
  const ignore = Array.isArray(drift.ignore) ? drift.ignore.filter(isMap).map((r) => ({ paths: Array.isArray(r.paths) ? r.paths.filter((p): p is string => typeof p === 'string') : [], ...(isMap(r.target) ? { target: { ...(typeof r.target.kind === 'string' ? { kind: r.target.kind } : {}), ...(typeof r.target.name === 'string' ? { name: r.target.name } : {}) } } : {}) })) : []
  return { mode: drift.mode === 'warn' ? 'warn' : 'correct', ignore }
}

/** The segments of a JSON pointer (RFC 6901): `/a/b~1c` → `['a', 'b/c']`. */
export function pointerSegments(pointer: string): string[] {
  return pointer.split('/').slice(1).map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
}

/** The ignore paths of a spec that apply to an object, as segments. */
export function ignoredPaths(drift: DriftSpec, d: RenderedObject): string[][] {
  const out: string[][] = []
  for (const rule of drift.ignore) {
    if (rule.target?.kind !== undefined && rule.target.kind !== d.kind) continue
    if (rule.target?.name !== undefined && rule.target.name !== d.metadata.name) continue
    for (const p of rule.paths) out.push(pointerSegments(p))
  }
  return out
}

/** The key fields named in a list-map segment `[name="x",protocol="TCP"]`. */
function segmentKeys(segment: string): string[] {
  return [...segment.matchAll(/(?:^\[|,)([A-Za-z0-9_]+)=/g)].map((m) => m[1]!)
}

/** The index of the item a segment names in a list (by key `[k="v"]` or by index), or -1. */
function itemIndex(list: readonly unknown[], segment: string, path: readonly string[]): number {
  if (/^(0|[1-9][0-9]*)$/.test(segment)) return Number(segment) < list.length ? Number(segment) : -1
  if (!segment.startsWith('[')) return -1
  const keys = listMapKeys(path) ?? segmentKeys(segment)
  return list.findIndex((x) => isMap(x) && keySegment(keys, x) === segment)
}

/** The value at `segments` of a JSON value (undefined when absent). */
function valueAt(root: unknown, segments: readonly string[]): unknown {
  let node = root
  const path: string[] = []
  for (const s of segments) {
    if (Array.isArray(node)) node = node[itemIndex(node, s, path)]
    else if (isMap(node) && Object.hasOwn(node, s)) node = node[s]
    else return undefined
    if (!s.startsWith('[')) path.push(s)
  }
  return node
}

/**
 * `desired` with the live value at each path where `owned` says the operator's apply owns it, and
 * without the path where it does not (or the live object has no value there) — only where the
 * rendered object has the path: a path it does not render is not the operator's to keep. A path
 * into an atomic list's item (`…/args/2`) keeps the whole list.
 */
export function keepLive(desired: RenderedObject, live: KubeObject, paths: readonly (readonly string[])[], owned: (segments: readonly string[]) => boolean = () => true): RenderedObject {
  if (paths.length === 0) return desired
  const out = structuredClone(desired) as JsonMap
  for (const full of paths) {
    const cut = full.findIndex((s) => /^(0|[1-9][0-9]*)$/.test(s))
    const segments = cut > 0 ? full.slice(0, cut) : full
    if (segments.length === 0) continue
    let node: unknown = out
    const path: string[] = []
    for (const s of segments.slice(0, -1)) {
      node = Array.isArray(node) ? node[itemIndex(node, s, path)] : isMap(node) ? node[s] : undefined
      if (!s.startsWith('[')) path.push(s)
    }
    const last = segments.at(-1)!
    const have = owned(segments) ? valueAt(live, segments) : undefined
    if (Array.isArray(node)) {
      const i = itemIndex(node, last, path)
      if (i < 0) continue
      if (have === undefined) node.splice(i, 1)
      else node[i] = structuredClone(have)
    } else if (isMap(node) && Object.hasOwn(node, last)) {
      if (have === undefined) delete node[last]
      else node[last] = structuredClone(have)
    }
  }
  return out as RenderedObject
}

/**
 * Whether a fieldsV1 set owns the field at `segments` (a diff's pointer segments: fields, list-map
 * keys `[k="v"]`, indexes below an atomic list, which is owned whole).
 */
export function owns(fields: JsonMap | undefined, segments: readonly string[]): boolean {
  let node: unknown = fields
  for (const s of segments) {
    if (!isMap(node)) return false
    // A leaf owns what is below it: an atomic list or map (args, a selector) is owned whole.
    if (!Object.keys(node).some((k) => k.startsWith('f:') || k.startsWith('k:') || k.startsWith('v:'))) return node !== fields
    let next: unknown
    if (s.startsWith('[')) {
      for (const [k, child] of Object.entries(node)) {
        if (!k.startsWith('k:')) continue
        const key = parseKey(k.slice(2))
        if (key && keySegment(Object.keys(key), key) === s) next = child
      }
    } else next = node[`f:${s}`]
    if (next === undefined) return false
    node = next
  }
  return true
}

function parseKey(text: string): JsonMap | undefined {
  try {
    const v: unknown = JSON.parse(text)
    return isMap(v) ? v : undefined
  } catch {
    return undefined
  }
}

/**
 * The paths (segments) where the live object has another value than the render and the operator's
 * managedFields entry no longer owns the field: changed by another manager. Values the render adds
 * (absent live) and fields it stopped rendering are not drift.
 */
export function driftedPaths(desired: RenderedObject, live: KubeObject): string[][] {
  const fields = appliedFields(live as JsonMap, FIELD_MANAGER)
  if (!fields) return []
  const out: string[][] = []
  const seen = new Set<string>()
  for (const op of diffObject(desired, live).patch) {
    const all = pointerSegments(op.path)
    // Below an atomic list (indexes), any change is a change of the whole list.
    const cut = all.findIndex((s) => /^(0|[1-9][0-9]*)$/.test(s))
    if (op.op !== 'replace' && cut < 0) continue
    const segments = cut >= 0 ? all.slice(0, cut) : all
    const key = JSON.stringify(segments)
    if (segments.length === 0 || seen.has(key) || owns(fields, segments)) continue
    seen.add(key)
    out.push(segments)
  }
  return out
}

/** The managers (other than the operator) whose managedFields own a path of the full live object. */
export function managersOf(live: KubeObject, segments: readonly string[]): string[] {
  const entries = (live.metadata.managedFields ?? []) as { manager?: string; fieldsV1?: unknown; subresource?: string }[]
  const out = new Set<string>()
  for (const e of entries) {
    if (e.manager === undefined || e.manager === FIELD_MANAGER || e.subresource === 'status' || !isMap(e.fieldsV1)) continue
    if (owns(e.fieldsV1, segments)) out.add(e.manager)
  }
  return [...out].sort()
}

/** A drifted field reported in `warn` mode. */
export interface Drift {
  what: string
  kind: string
  /** `.spec.replicas` */
  field: string
  managers: string[]
}

/** The API server's field-path text of pointer segments. */
function fieldPath(segments: readonly string[]): string {
  return segments.map((s) => (s.startsWith('[') ? s : /^(0|[1-9][0-9]*)$/.test(s) ? `[${s}]` : `.${s}`)).join('')
}

/**
 * Applies a CR's drift settings to its rendered objects: each object with its ignored paths — and,
 * in `warn` mode, its drifted ones — holding the live values, and the drift found. `unchanged`
 * skips objects as our last apply left them (nothing drifted); `fetch` reads an object whole (its
 * managedFields: the caches keep only the operator's entry) to name who changed a field.
 */
export async function applyDriftSpec(
  drift: DriftSpec,
  desired: readonly RenderedObject[],
  live: (d: RenderedObject) => KubeObject | undefined,
  unchanged: (d: RenderedObject, current: KubeObject) => boolean,
  fetch: (d: RenderedObject) => Promise<KubeObject | undefined>,
): Promise<{ desired: RenderedObject[]; drifts: Drift[] }> {
  const out: RenderedObject[] = []
  const drifts: Drift[] = []
  for (const d of desired) {
    const current = live(d)
    if (current === undefined) {
      out.push(d)
      continue
    }
    const fields = appliedFields(current as JsonMap, FIELD_MANAGER)
    const ours = (segments: readonly string[]) => owns(fields, segments)
    let adjusted = keepLive(d, current, ignoredPaths(drift, d), ours)
    if (drift.mode === 'warn' && !unchanged(adjusted, current)) {
      const paths = driftedPaths(adjusted, current)
      if (paths.length > 0) {
        const full = await fetch(d)
        for (const p of paths) drifts.push({ what: describeObject(d), kind: d.kind, field: fieldPath(p), managers: full ? managersOf(full, p) : [] })
        adjusted = keepLive(adjusted, current, paths, ours)
      }
    }
    out.push(adjusted)
  }
  return { desired: out, drifts }
}

/** The Drifted condition's message: each object and field, and who changed it. */
export function driftMessage(drifts: readonly Drift[]): string {
  const each = drifts.map((d) => `${d.what} ${d.field} (changed by ${d.managers.length > 0 ? d.managers.join(', ') : 'another manager'})`)
  return `left as they are (spec.drift.mode warn): ${each.join('; ')}`
}

/** Where {@link reportDrift} reports. */
export interface DriftReporter {
  events: { record(cr: Memcached, type: 'Normal' | 'Warning', reason: string, message: string, action?: string): Promise<void> }
  metrics: { drifted?(kind: string): void }
  log: Logger
}

/**
 * The Drifted condition of a CR in drift mode `warn` — True naming what another manager changed and
 * the operator left as it is, False once nothing is — with a Warning event, a log line and a metric
 * when what drifted changes. None for a CR that never had one.
 */
export async function reportDrift(cr: Memcached, drift: DriftSpec | undefined, drifts: readonly Drift[], to: DriftReporter): Promise<ConditionInput | undefined> {
  const before = findCondition(cr.status?.conditions, CONDITION_TYPES.Drifted)
  if (drifts.length === 0) {
    if (before === undefined) return undefined
    const message = drift?.mode === 'warn' ? 'no field the operator applies was changed by another manager' : 'drift mode is not warn: drift is corrected'
    return { type: CONDITION_TYPES.Drifted, status: 'False', reason: REASONS.NoDrift, message }
  }
  const message = driftMessage(drifts)
  if (before?.status !== 'True' || before.message !== message) {
    to.log.warn({ drift: drifts.map((d) => ({ object: d.what, field: d.field, managers: d.managers })) }, 'drift left as it is (drift mode warn)')
    for (const d of drifts) to.metrics.drifted?.(d.kind)
    await to.events.record(cr, 'Warning', REASONS.DriftDetected, message, 'Apply')
  }
  return { type: CONDITION_TYPES.Drifted, status: 'True', reason: REASONS.DriftDetected, message }
}
