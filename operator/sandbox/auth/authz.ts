/**
 * From a request to the authorizer's attributes, as k8s.io/apiserver's `RequestInfoFactory`
 * does it, and the 403 the server answers when no authorizer allows
 * (`endpoints/handlers/responsewriters/errors.go` `forbiddenMessage`, wrapped by
 * `apierrors.NewForbidden`).
 */
import { StatusError } from '../errors.ts'
import type { ApiRequest } from '../types.ts'
import type { Attributes } from './rbac.ts'
import type { UserInfo } from './user.ts'
import { parseFieldSelector, SelectorError } from '../../kube/labels.ts'

/**
 * The attributes of a resource request. A GET of a Namespace (or of its subresources) is in that
 * namespace; a list or watch with `fieldSelector=metadata.name=x` names `x`, so that rules with
 * `resourceNames` can allow it.
 */
export function resourceAttributes(req: ApiRequest, user: UserInfo): Attributes {
  const a: Attributes = { user, verb: req.verb, resourceRequest: true, group: req.group, version: req.version, resource: req.resource }
  if (req.subresource) a.subresource = req.subresource
  if (req.namespace) a.namespace = req.namespace
  if (req.name) a.name = req.name
  if (req.group === '' && req.resource === 'namespaces' && req.name) a.namespace = req.name
  if ((req.verb === 'list' || req.verb === 'watch') && !req.name) {
    // requestinfo.go: fields.ParseSelector, RequiresExactMatch("metadata.name"), a valid path segment.
    let name: string | undefined
    try {
      name = parseFieldSelector(req.query.get('fieldSelector')).requiresExactMatch('metadata.name')
    } catch (e) {
      if (!(e instanceof SelectorError)) throw e
    }
    if (name !== undefined && /^[^/%]+$/.test(name) && name !== '.' && name !== '..') a.name = name
  }
  return a
}

/** The attributes of a non-resource request (`/api`, `/version`, …): the verb is the method. */
export function nonResourceAttributes(method: string, path: string, user: UserInfo): Attributes {
  return { user, verb: method.toLowerCase(), resourceRequest: false, path }
}

/** `forbiddenMessage`. */
export function forbiddenMessage(a: Attributes): string {
  const user = JSON.stringify(a.user.username)
  if (!a.resourceRequest) return `User ${user} cannot ${a.verb} path ${JSON.stringify(a.path ?? '')}`
  const resource = a.subresource ? `${a.resource ?? ''}/${a.subresource}` : (a.resource ?? '')
  const where = a.namespace ? `in the namespace ${JSON.stringify(a.namespace)}` : 'at the cluster scope'
  return `User ${user} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.group ?? '')} ${where}`
}

// responsewriters.Forbidden escapes these before the message reaches the Status.
const sanitize = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/**
 * The 403 Status: `deployments.apps "x" is forbidden: User "u" cannot patch resource
 * "deployments" in API group "apps" in the namespace "ns"`, `: <reason>` appended when the
 * authorizers gave one; `forbidden: User "u" cannot get path "/x"` for non-resource URLs.
 */
export function forbidden(a: Attributes, reason: string): StatusError {
  const msg = sanitize(forbiddenMessage(a))
  const why = reason ? `${msg}: ${reason}` : msg
  const group = a.group ?? ''
  const resource = a.resourceRequest ? (a.resource ?? '') : ''
  const name = a.name ?? ''
  let message: string
  if (group === '' && resource === '') message = `forbidden: ${why}`
  else {
    const qualified = group === '' ? resource : `${resource}.${group}`
    message = name === '' ? `${qualified} is forbidden: ${why}` : `${qualified} ${JSON.stringify(name)} is forbidden: ${why}`
  }
  const err = new StatusError(403, 'Forbidden', message)
  // NewForbidden always sets details (empty fields omitted): `"details":{}` for a path.
  const details: { name?: string; group?: string; kind?: string } = {}
  if (name !== '') details.name = name
  if (group !== '') details.group = group
  if (resource !== '') details.kind = resource
  const s = err.status
  delete s.code
  s.details = details
  s.code = 403
  return err
}
