/**
 * The patch metadata a strategic merge patch is applied with: for each field, its
 * `patchStrategy` (`merge`, `replace`, `retainKeys`, comma-separated) and `patchMergeKey`.
 *
 * kube-apiserver reads them from the Go struct tags of the kind's type (apimachinery
 * pkg/util/strategicpatch/meta.go `PatchMetaFromStruct`, third_party/forked/golang/json
 * `LookupPatchMetadataForStruct`). The OpenAPI definitions carry the same tags as
 * `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` (the generator copies them), so
 * the lookups here walk the definitions with the struct reader's rules: a field of a struct is
 * found by its JSON name (then case-insensitively, as encoding/json does), a struct has no
 * field that its definition does not list, a map has no fields at all, and a slice lookup of a
 * field that is not a list (a pointer to a struct in Go) gives the struct itself.
 */
import { builtinDefinitions, definitionOf } from '../../kube/openapi-validate.ts'
import { strategicMergePatch as patchJson, type FieldPatchMeta, type JsonObject, type PatchMeta } from '../../kube/strategic-merge.ts'
import type { KubeObject, Topology } from '../types.ts'
import { childTopology, itemTopology } from './walk.ts'

export type { FieldPatchMeta, PatchMeta }

/** Applies a strategic merge patch to a stored object as kube-apiserver does (kube/strategic-merge.ts). */
export function strategicMergePatch(live: KubeObject, patch: unknown, meta: PatchMeta): KubeObject {
  return patchJson(live as unknown as JsonObject, patch, meta) as unknown as KubeObject
}

type Schema = Record<string, unknown>

/** Go's reflect.Kind name of what a schema decodes into, for the lookups' errors. */
function goKind(s: Schema): string {
  if (s.type === 'array') return 'slice'
  if (s.additionalProperties !== undefined && s.properties === undefined) return 'map'
  if (s.type === 'string') return 'string'
  if (s.type === 'integer') return s.format === 'int32' ? 'int32' : 'int64'
  if (s.type === 'number') return 'float64'
  if (s.type === 'boolean') return 'bool'
  return 'struct'
}

const split = (s: unknown): string[] => (typeof s === 'string' ? s.split(',') : [''])

/**
 * The metadata of swagger 2.0 `definitions` (upstream's `openapi/v2` document, or a test's),
 * starting at `root`.
 */
export function patchMetaFromOpenAPI(definitions: Readonly<Record<string, Schema>>, root: Schema): PatchMeta {
  const deref = (s: Schema): [Schema, string] => {
    let name = ''
    let cur = s
    for (let i = 0; i < 8 && typeof cur.$ref === 'string'; i++) {
      name = cur.$ref.slice(cur.$ref.lastIndexOf('/') + 1)
      cur = definitions[name] ?? {}
    }
    return [cur, name]
  }
  const at = (schema: Schema): PatchMeta => {
    const [s, name] = deref(schema)
    const field = (key: string): [Schema, FieldPatchMeta] => {
      const kind = goKind(s)
      if (kind !== 'struct') throw new Error(`merging an object in json but data type is not struct, instead is: ${kind}`)
      const props = (s.properties ?? {}) as Record<string, Schema>
      let f = Object.hasOwn(props, key) ? props[key] : undefined
      if (f === undefined) {
        const lower = key.toLowerCase()
        const k = Object.keys(props).find((p) => p.toLowerCase() === lower)
        if (k !== undefined) f = props[k]
      }
      // The Go type's name: the definition's last dotted segment (`io.k8s.api.core.v1.PodSpec`).
      if (f === undefined) throw new Error(`unable to find api field in struct ${name.slice(name.lastIndexOf('.') + 1)} for the json field ${JSON.stringify(key)}`)
      return [f, { strategies: split(f['x-kubernetes-patch-strategy']), mergeKey: typeof f['x-kubernetes-patch-merge-key'] === 'string' ? f['x-kubernetes-patch-merge-key'] : '' }]
    }
    return {
      forStruct(key) {
        const [f, meta] = field(key)
        return [at(f), meta]
      },
      forSlice(key) {
        const [f, meta] = field(key)
        const [fs] = deref(f)
        if (fs.type === 'array') {
          const items = (fs.items ?? {}) as Schema
          if (deref(items)[0].type === 'array') throw new Error('unexpected slice of slice')
          return [at(items), meta]
        }
        return [at(f), meta]
      },
    }
  }
  return at(root)
}

/**
 * The metadata implied by an apply topology, for a kind that has no OpenAPI definition here: a
 * list apply merges by key merges by its first key, a set merges as scalars, every other list is
 * replaced; no field is unknown.
 */
export function patchMetaFromTopology(t: Topology): PatchMeta {
  return {
    forStruct(key) {
      return [patchMetaFromTopology(childTopology(t, key)), { strategies: [''], mergeKey: '' }]
    },
    forSlice(key) {
      const c = childTopology(t, key)
      if (c.type !== 'list' || c.listType === 'atomic') return [patchMetaFromTopology(itemTopology(c)), { strategies: [''], mergeKey: '' }]
      return [patchMetaFromTopology(c.items), { strategies: ['merge'], mergeKey: c.listType === 'map' ? (c.keys?.[0] ?? '') : '' }]
    },
  }
}

/**
 * The metadata of a built-in kind (`group` '' for core), from upstream's definition of it; a kind
 * without one gets the metadata its apply topology implies.
 */
export function builtinPatchMeta(group: string, version: string, kind: string, topology: Topology): PatchMeta {
  const def = definitionOf(group, version, kind)
  return def === undefined ? patchMetaFromTopology(topology) : patchMetaFromOpenAPI(builtinDefinitions().definitions, def)
}
