/**
 * Strategic merge patch metadata of a built-in kind read from its OpenAPI definition, as kubectl and
 * kustomize read it (apimachinery strategicpatch `PatchMetaFromOpenAPI`): a list whose
 * `x-kubernetes-patch-strategy` includes `merge` merges its items by `x-kubernetes-patch-merge-key`
 * (a list of scalars merges as a union); every other list is replaced; maps merge. A kind the
 * definitions do not hold (a custom resource) gets the metadata of an unknown map: maps merge, lists
 * are replaced — what kustomize does for a kind it has no schema of.
 */
import { definitionOf, resolve, type Schema } from './openapi-validate.ts'
import type { FieldPatchMeta, PatchMeta } from './strategic-merge.ts'

const metas = new WeakMap<Schema, PatchMeta>()

const NONE: FieldPatchMeta = { strategies: [''], mergeKey: '' }
const OPEN: PatchMeta = { forStruct: () => [OPEN, NONE], forSlice: () => [OPEN, NONE] }

/** The patch metadata a schema node gives its members. */
export function schemaPatchMeta(schema: Schema | undefined): PatchMeta {
  if (schema === undefined) return OPEN
  const s = resolve(schema)
  let m = metas.get(s)
  if (m) return m
  const child = (key: string): Schema | undefined => {
    const props = s.properties as Record<string, Schema> | undefined
    if (props !== undefined && Object.hasOwn(props, key)) return props[key]
    const extra = s.additionalProperties
    return typeof extra === 'object' && extra !== null ? (extra as Schema) : undefined
  }
  const tags = (c: Schema | undefined): FieldPatchMeta => ({
    strategies: String(c?.['x-kubernetes-patch-strategy'] ?? '').split(','),
    mergeKey: String(c?.['x-kubernetes-patch-merge-key'] ?? ''),
  })
  m = {
    forStruct(key) {
      const c = child(key)
      return [schemaPatchMeta(c), tags(c)]
    },
    forSlice(key) {
      const c = child(key)
      return [schemaPatchMeta(c?.items as Schema | undefined), tags(c)]
    },
  }
  metas.set(s, m)
  return m
}

/** The patch metadata of a kind (`apps/v1` `Deployment`); an unknown kind's is that of an open map. */
export function kindPatchMeta(apiVersion: string, kind: string): PatchMeta {
  const slash = apiVersion.indexOf('/')
  const group = slash === -1 ? '' : apiVersion.slice(0, slash)
  const version = slash === -1 ? apiVersion : apiVersion.slice(slash + 1)
  return schemaPatchMeta(definitionOf(group, version, kind))
}
