/**
 * The sandbox's strategic merge patch: operator/kube/strategic-merge.ts with its patch metadata
 * read from the apply topologies. A list that apply merges by key (`patchStrategy: merge`) merges
 * by its first key (the `patchMergeKey`), a set merges as a union of scalars, every other list is
 * replaced; maps and structs always merge (strategic merge ignores `+mapType=atomic`). No built-in
 * served here has a `patchStrategy: replace` map.
 */
import { strategicMergePatch as patchWithMeta, type JsonObject as KubeJson, type PatchMeta } from '../../kube/strategic-merge.ts'
import type { KubeObject, Topology } from '../types.ts'
import { childTopology, itemTopology } from './walk.ts'

const metas = new WeakMap<Topology, PatchMeta>()

/** The patch metadata a topology implies (cached per topology node). */
export function topologyPatchMeta(t: Topology): PatchMeta {
  let m = metas.get(t)
  if (m) return m
  m = {
    field: (k) => topologyPatchMeta(childTopology(t, k)),
    list(k) {
      const c = childTopology(t, k)
      if (c.type !== 'list' || c.listType === 'atomic') return { items: topologyPatchMeta(itemTopology(c)), merge: false, mergeKey: '' }
      return { items: topologyPatchMeta(c.items), merge: true, mergeKey: c.listType === 'map' ? (c.keys?.[0] ?? '') : '' }
    },
  }
  metas.set(t, m)
  return m
}

/** Applies a strategic merge patch to `live` as kube-apiserver does (see strategic-merge.ts). */
export function strategicMergePatch(live: KubeObject, patch: unknown, topology: Topology): KubeObject {
  return patchWithMeta(live as unknown as KubeJson, patch, topologyPatchMeta(topology)) as unknown as KubeObject
}
