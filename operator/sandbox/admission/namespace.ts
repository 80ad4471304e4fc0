/**
 * The NamespaceLifecycle admission plugin (k8s.io/apiserver/pkg/admission/plugin/namespace/
 * lifecycle): nothing is created in a namespace that does not exist (404
 * `namespaces "x" not found`) or that is being terminated (403
 * `… is forbidden: unable to create new content in namespace x because it is being terminated`,
 * with a `NamespaceTerminating` cause). It runs in the mutating phase, before the name is
 * generated, so a `generateName` request is named by its prefix.
 */
import { StatusError, namespaceNotFound, qualifiedResource } from '../errors.ts'
import type { KubeObject, ResourceType } from '../types.ts'

/** Refuses a create of a namespaced object into a missing or terminating namespace. */
export function admitNamespaceLifecycle(type: ResourceType, obj: KubeObject, namespace: string, ns: KubeObject | undefined): void {
  if (!type.namespaced) return
  if (!ns) throw namespaceNotFound(namespace)
  const phase = (ns.status as { phase?: unknown } | undefined)?.phase
  if (phase !== 'Terminating') return
  // admission.NewForbidden names the object by its name, else its generateName.
  const name = obj.metadata.name || obj.metadata.generateName || 'Unknown'
  const details: NonNullable<ConstructorParameters<typeof StatusError>[3]> = { name }
  if (type.group !== '') details.group = type.group
  details.kind = type.resource
  details.causes = [{ reason: 'NamespaceTerminating', message: `namespace ${namespace} is being terminated`, field: 'metadata.namespace' }]
  throw new StatusError(403, 'Forbidden', `${qualifiedResource(type.group, type.resource)} ${JSON.stringify(name)} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`, details)
}
