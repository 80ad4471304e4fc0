/**
 * Creating an object that the operator's own (label-filtered) cache does not show, without ever
 * writing to somebody else's object of the same name, and without a cache of everybody else's
 * objects: one server-side apply that can only create.
 *
 * The apply carries `metadata.uid` set to a fresh random UUID. kube-apiserver:
 * - to a missing object, an apply takes the create-on-update path of apiserver
 *   registry/generic/registry/store.go `Update`, which fills the system fields
 *   (`rest.FillObjectMetaSystemFields`): the object gets a server-generated uid, and, uid being
 *   among the fields the field manager strips (fieldmanager/internal/stripmeta.go), only our
 *   `Apply` managedFields entry — as any later apply of ours leaves it, so a field the chart drops
 *   later is removed by that apply;
 * - to an existing object, the uid is merged into it, kept by `rest.BeforeUpdate` ("Use the
 *   existing UID if none is provided", registry/rest/update.go) and refused by
 *   `ValidateObjectMetaUpdate`: 422 Invalid `metadata.uid: … field is immutable`, nothing written.
 *   Then the object is read with one GET and judged as it is (its controller reference and labels),
 *   never by when it was created.
 * A lost answer, a retry or a new leader finds the same: a uid of ours is never on any object.
 */
import { randomUUID } from 'node:crypto'
import { ApiError, isNotFound, type KubeClient, type KubeObject } from '../controller/client.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { FIELD_MANAGER } from './diff.ts'

/** What {@link createOrGet} found: the object it created, or the one that was already there. */
export interface CreateResult {
  object: KubeObject
  created: boolean
}

/** Whether an error is the 422 of an apply whose uid is not the existing object's ({@link createOrGet}). */
export function isUidRefused(err: unknown): boolean {
  if (!(err instanceof ApiError) || err.status !== 422) return false
  const causes = err.details?.causes
  return Array.isArray(causes) && causes.some((c: unknown) => (c as { field?: unknown } | null)?.field === 'metadata.uid')
}

/**
 * Applies `d` with a fresh uid, which creates it or changes nothing; when the server refuses the
 * uid (the object exists), GETs the object that is there (applying again once if it went between
 * the two).
 * @throws ApiError of the apply or the GET
 */
export async function createOrGet(client: KubeClient, d: RenderedObject): Promise<CreateResult> {
  const ref = { apiVersion: d.apiVersion, kind: d.kind, namespace: d.metadata.namespace, name: d.metadata.name }
  for (let attempt = 0; ; attempt++) {
    try {
      return { object: await client.apply({ ...d, metadata: { ...d.metadata, uid: randomUUID() } }, { fieldManager: FIELD_MANAGER, force: true }), created: true }
    } catch (err) {
      if (!isUidRefused(err)) throw err
    }
    try {
      return { object: await client.get(ref), created: false }
    } catch (err) {
      if (!isNotFound(err) || attempt > 0) throw err
    }
  }
}
