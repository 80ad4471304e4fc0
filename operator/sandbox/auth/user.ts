/**
 * Who a request is from, as k8s.io/apiserver's `user.Info` describes it, and the naming rules of
 * ServiceAccount users (k8s.io/apiserver/pkg/authentication/serviceaccount).
 */

/** An authenticated (or anonymous) identity. */
export interface UserInfo {
  username: string
  uid?: string
  groups: string[]
  extra?: Record<string, string[]>
}

/** The group every authenticated user has. */
export const allAuthenticated = 'system:authenticated'
/** The group of anonymous requests. */
export const allUnauthenticated = 'system:unauthenticated'
/** The group the privileged-group authorizer allows everything. */
export const privilegedGroup = 'system:masters'
/** The anonymous user. */
export const anonymous = 'system:anonymous'

const saPrefix = 'system:serviceaccount:'

/** `system:serviceaccount:<ns>:<name>`. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `${saPrefix}${namespace}:${name}`
}

/** The namespace and name of a ServiceAccount username, or undefined for any other user. */
export function splitServiceAccountUsername(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(saPrefix)) return undefined
  const parts = username.slice(saPrefix.length).split(':')
  if (parts.length !== 2 || !parts[0] || !parts[1]) return undefined
  return { namespace: parts[0], name: parts[1] }
}

/** The groups of a ServiceAccount user: `system:serviceaccounts`, `system:serviceaccounts:<ns>`. */
export function serviceAccountGroups(namespace: string): string[] {
  return ['system:serviceaccounts', `system:serviceaccounts:${namespace}`]
}

/**
 * The identity a kubeconfig or a test asks for: a username and its groups; a ServiceAccount
 * username without groups gets the ServiceAccount groups; `system:authenticated` is always added.
 */
export function userFor(spec: { user: string; groups?: string[]; uid?: string }): UserInfo {
  let groups = spec.groups ?? []
  const sa = splitServiceAccountUsername(spec.user)
  if (groups.length === 0 && sa) groups = serviceAccountGroups(sa.namespace)
  if (!groups.includes(allAuthenticated)) groups = [...groups, allAuthenticated]
  const u: UserInfo = { username: spec.user, groups }
  if (spec.uid) u.uid = spec.uid
  return u
}
