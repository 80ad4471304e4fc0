/**
 * structured-merge-diff's schema language (schema/elements.go, as its tests write it in YAML) as
 * the sandbox apply engine's topologies, for the transcribed upstream tables.
 */
import { ANY, SCALAR } from '../../operator/sandbox/apply/walk.ts'
import type { Json, Topology } from '../../operator/sandbox/types.ts'

const UNTYPED_ATOMIC: Topology = { type: 'struct', fields: {}, atomic: true }

export interface TypeRef {
  namedType?: string
  elementRelationship?: string
  scalar?: string
  list?: { elementType?: TypeRef; elementRelationship?: string; keys?: string[] }
  map?: { fields?: { name: string; type: TypeRef; default?: Json }[]; elementType?: TypeRef; elementRelationship?: string }
  untyped?: unknown
}

export interface SchemaType extends TypeRef {
  name: string
}

/** Topology of SMD's schema language (schema/elements.go): maps separable unless atomic, lists atomic unless associative. */
export function topologies(schema: { types: SchemaType[] }): (name: string) => Topology {
  const types = new Map(schema.types.map((x) => [x.name, x]))
  const cache = new Map<string, Topology>()
  const raw = (tr: TypeRef): TypeRef => (tr.namedType !== undefined ? (types.get(tr.namedType) ?? {}) : tr)
  const named = (name: string): Topology => {
    // The deduced type walks maps granularly and keeps lists atomic, as the engine's `any`; the
    // atomic one replaces every value whole, as an atomic struct does.
    if (name === '__untyped_deduced_') return ANY
    if (name === '__untyped_atomic_') return UNTYPED_ATOMIC
    const hit = cache.get(name)
    if (hit !== undefined) return hit
    const placeholder = {} as Topology
    cache.set(name, placeholder)
    return Object.assign(placeholder, atom(types.get(name) ?? {}))
  }
  const ref = (tr: TypeRef): Topology => {
    const base = tr.namedType !== undefined ? named(tr.namedType) : atom(tr)
    const rel = tr.elementRelationship
    if (rel === undefined || (tr.namedType === undefined && (tr.list !== undefined || tr.map !== undefined))) return base
    if (base.type === 'list') return { ...base, listType: rel === 'atomic' ? 'atomic' : base.keys !== undefined && base.keys.length > 0 ? 'map' : 'set' }
    if (base.type === 'struct' || base.type === 'map') return { ...base, atomic: rel === 'atomic' }
    return base
  }
  const atom = (a: TypeRef): Topology => {
    if (a.scalar !== undefined) return a.scalar === 'untyped' ? ANY : SCALAR
    if (a.list !== undefined) {
      const items = a.list.elementType !== undefined ? ref(a.list.elementType) : ANY
      if (a.list.elementRelationship !== 'associative') return { type: 'list', items, listType: 'atomic' }
      const keys = a.list.keys ?? []
      if (keys.length === 0) return { type: 'list', items, listType: 'set' }
      const t: Topology = { type: 'list', items, listType: 'map', keys }
      const fields = a.list.elementType !== undefined ? (raw(a.list.elementType).map?.fields ?? []) : []
      const defaults: Record<string, Json> = {}
      for (const f of fields) if (keys.includes(f.name) && f.default !== undefined) defaults[f.name] = f.default
      if (Object.keys(defaults).length > 0) t.keyDefaults = defaults
      return t
    }
    if (a.map !== undefined) {
      const atomic = a.map.elementRelationship === 'atomic'
      if (a.map.fields !== undefined && a.map.fields.length > 0) {
        const fields: Record<string, Topology> = {}
        for (const f of a.map.fields) fields[f.name] = ref(f.type)
        const t: Topology = { type: 'struct', fields }
        if (a.map.elementType !== undefined) t.preserveUnknown = true
        if (atomic) t.atomic = true
        return t
      }
      if (a.map.elementType !== undefined) return atomic ? { type: 'map', values: ref(a.map.elementType), atomic } : { type: 'map', values: ref(a.map.elementType) }
      return atomic ? { type: 'struct', fields: {}, atomic } : { type: 'struct', fields: {} }
    }
    return ANY
  }
  return named
}
