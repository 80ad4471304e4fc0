/**
 * How a value is seen through its topology: which nodes are leaves, which are merged field by
 * field, how list items are identified. Shared by merge, compare, removal and field-set building.
 */
import type { Json, Topology } from '../types.ts'
import { isObject, sortedJson } from '../../kube/json.ts'

/**
 * A struct field the schema does not name. For built-in kinds this stands for the many Go struct
 * fields the sandbox does not model: objects merge field by field, lists are atomic, and (unlike
 * `any`) the field itself is not a member of an apply set — exactly what a Go struct field does.
 */
export const OPEN: Topology = Object.freeze({ type: 'struct', fields: Object.freeze({}) }) as Topology
/** Deduced type (x-kubernetes-preserve-unknown-fields, int-or-string). */
export const ANY: Topology = Object.freeze({ type: 'any' }) as Topology
/** A scalar leaf. */
export const SCALAR: Topology = Object.freeze({ type: 'scalar' }) as Topology

/**
 * Extension the sandbox puts on struct topologies: `implicit` marks a struct that a Go zero value
 * always carries (`spec`, `spec.template`, `spec.strategy`…). Comparisons treat it as `{}` when
 * absent, so a create's Update manager owns `f:spec.f:replicas` but not `f:spec` itself, as on a
 * real server.
 */
export interface ImplicitFlag {
  implicit?: boolean
  /**
   * On the root of a built-in kind's topology: objects of this kind go through Go types on a real
   * server, so empty lists and empty maps (all `omitempty`) vanish from what is stored.
   */
  goTyped?: boolean
}

/** Whether a topology node is an implicit struct. */
export function isImplicit(t: Topology): boolean {
  return (t as ImplicitFlag).implicit === true
}

/** The node kinds walkers distinguish. */
export const LEAF_KIND = 0
/** Struct: children are named fields, not members themselves. */
export const STRUCT_KIND = 1
/** Granular map (or a deduced object): every entry is a member. */
export const MAP_KIND = 2
/** Associative list (set or map). */
export const LIST_KIND = 3
/** One of the node kinds above. */
export type Kind = 0 | 1 | 2 | 3

/** How `v` is walked under `t`. A value whose JSON type does not fit is a leaf. */
export function kindOf(t: Topology, v: unknown): Kind {
  switch (t.type) {
    case 'struct':
      return !t.atomic && isObject(v) ? STRUCT_KIND : LEAF_KIND
    case 'map':
      return !t.atomic && isObject(v) ? MAP_KIND : LEAF_KIND
    case 'any':
      return isObject(v) ? MAP_KIND : LEAF_KIND
    case 'list':
      return t.listType !== 'atomic' && Array.isArray(v) ? LIST_KIND : LEAF_KIND
    default:
      return LEAF_KIND
  }
}

/** The topology of member `k` of an object walked under `t` (struct, map or any). */
export function childTopology(t: Topology, k: string): Topology {
  if (t.type === 'struct') return t.fields[k] ?? (t.preserveUnknown ? ANY : OPEN)
  if (t.type === 'map') return t.values
  return ANY
}

/** The topology of a list's items. */
export function itemTopology(t: Topology): Topology {
  return t.type === 'list' ? t.items : ANY
}

/** An item of an associative list that cannot be identified (a missing key without default). */
export class ItemKeyError extends Error {
  readonly detail: string
  constructor(detail: string) {
    super(detail)
    this.name = 'ItemKeyError'
    this.detail = detail
  }
}

/**
 * The path element (fieldsV1 spelling) of item `i` of an associative list. As typed/helpers.go
 * (structured-merge-diff v6.3.0) builds it: a key field the item lacks takes its default, or is
 * left out of the key when it has none; an item without any key field cannot be identified.
 */
export function itemElement(t: Topology, item: unknown, i: number): string {
  if (t.type !== 'list' || t.listType !== 'map') return 'v:' + JSON.stringify(item)
  const keys = t.keys ?? []
  if (!isObject(item)) throw new ItemKeyError(`element ${i}: ${item === null ? 'associative list with keys may not have a null element' : 'associative list with keys may not have non-map elements'}`)
  if (keys.length === 1) {
    const k = keys[0] as string
    let v = item[k]
    if (v === undefined || v === null) v = t.keyDefaults?.[k]
    if (v === undefined || v === null) throw omitsAllKeys(i, keys)
    return 'k:{' + JSON.stringify(k) + ':' + JSON.stringify(v) + '}'
  }
  const o: Record<string, Json> = {}
  let found = false
  for (const k of keys) {
    let v = item[k]
    if (v === undefined || v === null) v = t.keyDefaults?.[k]
    if (v === undefined || v === null) continue
    o[k] = v
    found = true
  }
  if (!found && keys.length > 0) throw omitsAllKeys(i, keys)
  return 'k:' + sortedJson(o)
}

function omitsAllKeys(i: number, keys: readonly string[]): ItemKeyError {
  // Go's %q of a []string: each quoted, space-separated, in brackets.
  const quoted = '[' + keys.map((k) => JSON.stringify(k)).join(' ') + ']'
  return new ItemKeyError(`element ${i}: associative list with keys has an element that omits all key fields ${quoted} (and doesn't have default values for any key fields)`)
}

/** Whether a topology is the root of a built-in (Go-typed) kind. */
export function isGoTyped(t: Topology): boolean {
  return (t as ImplicitFlag).goTyped === true
}
