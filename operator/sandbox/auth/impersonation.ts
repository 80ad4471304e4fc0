/**
 * Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`,
 * `Impersonate-Extra-<key>`), as k8s.io/apiserver's `WithImpersonation` filter does it: each
 * requested attribute is authorized with the `impersonate` verb on `users`, `serviceaccounts`
 * (for `system:serviceaccount:` names), `groups`, `uids` or `userextras/<key>`; the first one
 * refused answers 403; then the request continues as the impersonated user.
 */
import type { IncomingHttpHeaders } from 'node:http'
import { StatusError } from '../errors.ts'
import { forbidden } from './authz.ts'
import type { Attributes, Decision } from './rbac.ts'
import { allAuthenticated, allUnauthenticated, anonymous, serviceAccountGroups, splitServiceAccountUsername, type UserInfo } from './user.ts'

function values(headers: IncomingHttpHeaders, name: string): string[] {
  const v = headers[name]
  if (v === undefined) return []
  // node joins repeated headers with ", " (except a few); the Go server keeps them apart.
  return (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter((s) => s !== '')
}

/**
 * The user a request acts as: `requester` itself without impersonation headers.
 * @throws StatusError 403 when the requester may not impersonate, 500 for groups without a user
 */
export function impersonate(requester: UserInfo, headers: IncomingHttpHeaders, authorize: (a: Attributes) => Decision): UserInfo {
  const username = typeof headers['impersonate-user'] === 'string' ? headers['impersonate-user'] : ''
  const groups = values(headers, 'impersonate-group')
  const uid = typeof headers['impersonate-uid'] === 'string' ? headers['impersonate-uid'] : ''
  const extras: [string, string][] = []
  for (const [name, v] of Object.entries(headers)) {
    if (!name.startsWith('impersonate-extra-') || v === undefined) continue
    const key = decodeURIComponent(name.slice('impersonate-extra-'.length))
    for (const value of values(headers, name)) extras.push([key, value])
  }
  if (username === '') {
    if (groups.length > 0 || extras.length > 0 || uid !== '')
      throw new StatusError(500, 'InternalError', 'Internal error occurred: requested impersonation of groups, extras or a uid without impersonating a user')
    return requester
  }
  const check = (a: Omit<Attributes, 'user' | 'verb' | 'resourceRequest'>): void => {
    const attrs: Attributes = { user: requester, verb: 'impersonate', resourceRequest: true, group: '', ...a }
    const d = authorize(attrs)
    if (!d.allowed) throw forbidden(attrs, d.reason)
  }
  const out: UserInfo = { username, groups: [] }
  const sa = splitServiceAccountUsername(username)
  if (sa) {
    check({ resource: 'serviceaccounts', namespace: sa.namespace, name: sa.name })
    if (groups.length === 0) out.groups = serviceAccountGroups(sa.namespace)
  } else check({ resource: 'users', name: username })
  for (const g of groups) {
    check({ resource: 'groups', name: g })
    out.groups.push(g)
  }
  for (const [key, value] of extras) {
    check({ group: 'authentication.k8s.io', resource: 'userextras', subresource: key, name: value })
    out.extra ??= {}
    ;(out.extra[key] ??= []).push(value)
  }
  if (uid !== '') {
    check({ group: 'authentication.k8s.io', resource: 'uids', name: uid })
    out.uid = uid
  }
  // system:authenticated is added unless the caller named it or system:unauthenticated.
  if (username !== anonymous) {
    if (!out.groups.includes(allAuthenticated) && !out.groups.includes(allUnauthenticated)) out.groups.push(allAuthenticated)
  } else if (!out.groups.includes(allUnauthenticated)) out.groups.push(allUnauthenticated)
  return out
}
