/**
 * What the API server does to an object between our apply and our next read, undone so that a
 * live object can be compared with the rendered one field by field:
 *
 * - the live object carries more than we render (defaults, status, managedFields, fields of other
 *   managers): {@link projectOnto} keeps only the fields the desired object has;
 * - lists that Kubernetes merges by key (containers by name, container ports by
 *   containerPort+protocol, …) are matched by key, not by index — an item another manager added
 *   is not ours and is left out, as server-side apply would leave it in place;
 * - atomic lists and maps (args, command, tolerations, label selectors, a Service's selector,
 *   nodeSelector) are replaced whole by an apply, so they are compared whole;
 * - sets (metadata.finalizers) are compared by value: another manager's finalizer is not ours;
 * - quantities are re-spelled canonically (`0.5` → `500m`), a missing key field takes its
 *   default (`protocol: TCP`), empty maps and lists and nulls disappear (Go's `omitempty`).
 *
 * int-or-string fields keep their JSON type on the server, so `targetPort: 11211` and
 * `targetPort: "11211"` stay different here too.
 *
 * Deliberate blind spots, each cheaper than the perpetual diffs it avoids:
 * - the order of list-map items is not compared (another manager reordering containers or env
 *   vars is not corrected until something else changes);
 * - an empty map or list is the same as an absent one (the Go types cannot tell most of them
 *   apart either; `selector: {}` vs no selector is the exception, and no chart renders it).
 *
 * Topology covers the built-in kinds a chart declares (kinds.yaml) and is looked up by
 * field name; it follows the table of the API server reference (§1.6), which follows k8s.io/api's
 * `patchMergeKey` / `listType` markers.
 */
import { canonicalQuantity } from '../kube/quantity.ts'

/** A JSON map. */
export type JsonMap = { [key: string]: unknown }

const CONTAINER_LISTS = new Set(['containers', 'initContainers', 'ephemeralContainers'])

/** Lists merged by key (`patchMergeKey` / `x-kubernetes-list-map-keys`), by the field's name. */
const LIST_MAP_KEYS: Readonly<Record<string, readonly string[]>> = {
  containers: ['name'],
  initContainers: ['name'],
  ephemeralContainers: ['name'],
  env: ['name'],
  volumes: ['name'],
  volumeMounts: ['mountPath'],
  volumeDevices: ['devicePath'],
  imagePullSecrets: ['name'],
  topologySpreadConstraints: ['topologyKey', 'whenUnsatisfiable'],
  conditions: ['type'],
  ownerReferences: ['uid'],
  hostAliases: ['ip'],
  schedulingGates: ['name'],
  resourceClaims: ['name'],
}

/** Lists that are sets (`x-kubernetes-list-type: set`): items are kept by value, order is irrelevant. */
const SETS = new Set(['finalizers'])

/** Whether the list at `path` is a set of scalars. */
export function isSet(path: readonly string[]): boolean {
  const last = path[path.length - 1]
  return last !== undefined && SETS.has(last)
}

/** Defaults of key fields: a port without protocol is the TCP port (the key includes the default). */
const KEY_DEFAULTS: Readonly<Record<string, unknown>> = { protocol: 'TCP' }

/** Maps and structs that an apply replaces whole (metav1.LabelSelector is an atomic struct). */
const ATOMIC_MAPS = new Set(['selector', 'labelSelector', 'namespaceSelector', 'nodeSelector'])

/** Fields that are resource quantities, below `resources.requests`/`resources.limits` or by name. */
function isQuantityPath(path: readonly string[]): boolean {
  const n = path.length
  if (path[n - 1] === 'sizeLimit') return true
  if (path[n - 2] === 'overhead') return true
  return (path[n - 2] === 'requests' || path[n - 2] === 'limits') && path[n - 3] === 'resources'
}

/**
 * The key fields of the list at `path` (field names from the object's root), or undefined when
 * the list is atomic. Ports are keyed differently in a container and in a Service.
 */
export function listMapKeys(path: readonly string[]): readonly string[] | undefined {
  const last = path[path.length - 1]
  if (last === undefined) return undefined
  if (last === 'ports') {
    const parent = path[path.length - 2]
    if (parent !== undefined && CONTAINER_LISTS.has(parent)) return ['containerPort', 'protocol']
    if (path.length === 2 && parent === 'spec') return ['port', 'protocol']
    return undefined
  }
  return Object.hasOwn(LIST_MAP_KEYS, last) ? LIST_MAP_KEYS[last] : undefined
}

/** Whether the map at `path` is replaced whole by an apply. */
export function isAtomicMap(path: readonly string[]): boolean {
  const last = path[path.length - 1]
  return last !== undefined && ATOMIC_MAPS.has(last)
}

/** A plain JSON map (not a list, not null). */
export function isMap(v: unknown): v is JsonMap {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** The value of a key field of a list-map item, its default when missing. */
export function keyValue(item: JsonMap, field: string): unknown {
  const v = item[field]
  return v === undefined || v === null ? KEY_DEFAULTS[field] ?? null : v
}

/**
 * A list-map item's key in the API server's field-path syntax, `[name="memcached"]`,
 * `[containerPort=11211,protocol="TCP"]` (key fields sorted by name, as in managedFields).
 */
export function keySegment(keys: readonly string[], item: JsonMap): string {
  return `[${[...keys].sort().map((k) => `${k}=${JSON.stringify(keyValue(item, k))}`).join(',')}]`
}

/** Whether two list-map items have the same key (defaults applied). */
export function sameKey(keys: readonly string[], a: JsonMap, b: JsonMap): boolean {
  return keys.every((k) => jsonEqual(keyValue(a, k), keyValue(b, k)))
}

/** Structural equality of JSON values (map key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]))
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a)
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]))
  }
  return false
}

/**
 * The live object restricted to the desired object's shape: for every field of `desired`, the
 * live value at the same place (absent when the live object lacks it). List-maps are projected
 * item by item, matched by key, in the desired order; live items whose key the desired list does
 * not have are left out (another manager's, which an apply would keep). Atomic lists and maps and
 * scalars come back whole. `live` is not modified; the result may share nested values with it, so
 * treat it as read-only.
 */
export function projectOnto(desired: unknown, live: unknown): unknown {
  return project(desired, live, [])
}

function project(d: unknown, l: unknown, path: readonly string[]): unknown {
  if (l === undefined) return undefined
  if (isMap(d) && isMap(l) && !isAtomicMap(path)) {
    const out: JsonMap = {}
    for (const k of Object.keys(d)) {
      if (!Object.hasOwn(l, k)) continue
      const v = project(d[k], l[k], [...path, k])
      if (v !== undefined) out[k] = v
    }
    return out
  }
  if (isSet(path) && Array.isArray(d) && Array.isArray(l)) return l.filter((x) => d.some((y) => jsonEqual(x, y)))
  const keys = listMapKeys(path)
  if (keys && Array.isArray(d) && Array.isArray(l)) {
    const out: unknown[] = []
    for (const item of d) {
      if (!isMap(item)) continue
      const match = l.find((x): x is JsonMap => isMap(x) && sameKey(keys, item, x))
      if (match) out.push(project(item, match, path))
    }
    return out
  }
  return l
}

/**
 * The comparable form of an object (desired, or a projection of a live one): nulls, empty maps
 * and empty lists dropped (the server's Go types omit them), quantities canonical, and every
 * list-map turned into a map from {@link keySegment} to its item, so that items are compared by
 * key and a difference reads `/spec/template/spec/containers/[name="memcached"]/image`.
 * Of two items with the same key the last wins (the API server refuses such an object anyway).
 * Returns undefined for a value that normalises to nothing.
 */
export function normalize(value: unknown, path: readonly string[] = []): unknown {
  if (value === null || value === undefined) return undefined
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined
    const keys = listMapKeys(path)
    if (keys && value.every(isMap)) {
      const out: JsonMap = {}
      for (const item of value) out[keySegment(keys, item)] = normalize(item, path) ?? {}
      return out
    }
    const items = value.map((x) => normalize(x, path) ?? null)
    if (isSet(path)) return [...new Map(items.map((x) => [JSON.stringify(x), x])).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, x]) => x)
    return items
  }
  if (isMap(value)) {
    const out: JsonMap = {}
    for (const [k, v] of Object.entries(value)) {
      const n = normalize(v, [...path, k])
      if (n !== undefined) out[k] = n
    }
    return Object.keys(out).length === 0 ? undefined : out
  }
  if ((typeof value === 'string' || typeof value === 'number') && isQuantityPath(path)) {
    try {
      return canonicalQuantity(value)
    } catch {
      // Not a quantity: the server would refuse it; compare it as written.
      return value
    }
  }
  return value
}
