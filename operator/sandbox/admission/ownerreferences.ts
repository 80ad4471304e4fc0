/**
 * OwnerReferencesPermissionEnforcement (plugin/pkg/admission/gc/gc_admission.go), on by default on
 * OpenShift: whoever changes an object's ownerReferences must be allowed to delete that object,
 * and whoever newly sets `blockOwnerDeletion: true` on a reference must be allowed to `update` the
 * owner's `finalizers` subresource. Controllers that stamp blockOwnerDeletion without that rule
 * are refused on such clusters; this is how the sandbox finds them.
 */
import { forbidden, type StatusError } from '../errors.ts'
import type { Attributes, Decision } from '../auth/rbac.ts'
import type { UserInfo } from '../auth/user.ts'
import type { KubeObject, OwnerReference, ResourceType } from '../types.ts'

/** Finds the resource types of an owner reference's kind (the RESTMapper). */
export type KindMapper = (group: string, version: string, kind: string) => ResourceType | undefined

function refs(obj: KubeObject | undefined): OwnerReference[] {
  return Array.isArray(obj?.metadata.ownerReferences) ? obj.metadata.ownerReferences : []
}

/** isChangingOwnerReference: a create with references, or any difference in the list. */
function changing(obj: KubeObject, old: KubeObject | undefined): boolean {
  if (!old) return refs(obj).length > 0
  return JSON.stringify(refs(obj)) !== JSON.stringify(refs(old))
}

/** newBlockingOwnerDeletionRefs: blocking references that are new (by uid) or were not blocking. */
function newlyBlocking(obj: KubeObject, old: KubeObject | undefined): OwnerReference[] {
  const before = new Map(refs(old).map((r) => [r.uid, r]))
  return refs(obj).filter((r) => r.blockOwnerDeletion === true && before.get(r.uid)?.blockOwnerDeletion !== true)
}

/** `<reason>, <nil>`: the authorizer's reason and error as the plugin prints them. */
const because = (d: Decision) => `${d.allowed ? '' : d.reason}, <nil>`

/**
 * @throws StatusError 403 `deployments.apps "x" is forbidden: cannot set blockOwnerDeletion if an
 *   ownerReference refers to a resource you can't set finalizers on: , <nil>` (or the delete rule's)
 */
export function admitOwnerReferences(type: ResourceType, obj: KubeObject, old: KubeObject | undefined, user: UserInfo, subresource: string | undefined, authorize: (a: Attributes) => Decision, mapKind: KindMapper): void {
  // pods/status is on the plugin's whitelist; other status writes cannot change metadata here.
  if (subresource !== undefined || !changing(obj, old)) return
  const name = obj.metadata.name ?? ''
  const namespace = obj.metadata.namespace
  const refuse = (why: string): StatusError => forbidden(type.group, type.resource, name, why)
  const del: Attributes = { user, verb: 'delete', resourceRequest: true, group: type.group, version: type.version, resource: type.resource, name, ...(namespace ? { namespace } : {}) }
  const canDelete = authorize(del)
  if (!canDelete.allowed) throw refuse(`cannot set an ownerRef on a resource you can't delete: ${because(canDelete)}`)
  for (const ref of newlyBlocking(obj, old)) {
    const [group, version] = ref.apiVersion.includes('/') ? ref.apiVersion.split('/') : ['', ref.apiVersion]
    const owner = mapKind(group ?? '', version ?? '', ref.kind)
    if (!owner) throw refuse(`cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion ${ref.apiVersion} Kind ${ref.kind}: ${canDelete.reason}, no matches for kind "${ref.kind}" in version "${ref.apiVersion}"`)
    const update: Attributes = { user, verb: 'update', resourceRequest: true, group: owner.group, version: owner.version, resource: owner.resource, subresource: 'finalizers', name: ref.name, ...(namespace ? { namespace } : {}) }
    const d = authorize(update)
    if (!d.allowed) throw refuse(`cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: ${because(d)}`)
  }
}
