/** The label, field and namespace filter of a list, a watch or a deletecollection. */
import { fieldsOf, parseFieldSelector, parseLabelSelector, type Selector } from '../../kube/labels.ts'
import { StoredObject } from '../store.ts'
import type { ApiRequest, KubeObject, ResourceType } from '../types.ts'

/** What a list or watch selects: a namespace, a label selector, a field selector. */
export interface WatchFilter {
  namespace: string | undefined
  labels: Selector
  fields: Selector & { fields: string[] }
}

/** {@link matchesFilter} for a stored object, without parsing it when only the namespace is asked for. */
export function storedMatches(f: WatchFilter, stored: StoredObject): boolean {
  if (f.namespace && stored.namespace !== f.namespace) return false
  return (f.labels.empty && f.fields.empty) || matchesFilter(f, stored.obj)
}

function matchesFilter(f: WatchFilter, obj: KubeObject): boolean {
  if (f.namespace && obj.metadata.namespace !== f.namespace) return false
  if (!f.labels.empty && !f.labels.matches(obj.metadata.labels)) return false
  if (!f.fields.empty && !f.fields.matches(fieldsOf(obj, f.fields.fields))) return false
  return true
}

/** The filter of a list or watch request (`labelSelector`, `fieldSelector`, the URL's namespace). */
export function filterOf(type: ResourceType, req: ApiRequest): WatchFilter {
  const fields = parseFieldSelector(req.query.get('fieldSelector'))
  return { namespace: type.namespaced ? req.namespace : undefined, labels: parseLabelSelector(req.query.get('labelSelector')), fields }
}
