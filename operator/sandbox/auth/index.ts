/**
 * Authentication, impersonation and authorization of the sandbox's HTTP requests, the RBAC
 * bootstrap policy, and the review APIs — kube-apiserver's handler chain in front of the
 * sandbox's request pipeline. In-process requests (`cluster.handle`, `cluster.watch`, the
 * simulated controllers) do not pass through it: they act as the server itself.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { Cluster, Reply } from '../cluster.ts'
import type { ApiRequest, KubeObject } from '../types.ts'
import { Authenticator, adminUser } from './authn.ts'
import { forbidden, nonResourceAttributes, resourceAttributes } from './authz.ts'
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from './bootstrap.ts'
import { impersonate } from './impersonation.ts'
import { aggregatedRules, RbacAuthorizer } from './rbac.ts'
import { reviewResources, Reviews } from './reviews.ts'
import { userFor, type UserInfo } from './user.ts'

export type { UserInfo } from './user.ts'
export { adminToken, adminUser } from './authn.ts'

/** The identity kube-apiserver's own loopback client has: what in-process requests act as. */
export const loopbackUser: UserInfo = { username: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] }

/** An identity to issue a token for: a user (or `system:serviceaccount:<ns>:<name>`) and its groups. */
export interface IdentitySpec {
  user: string
  groups?: string[]
  uid?: string
}

/** Options of {@link Auth}. */
export interface AuthOptions {
  /** Requests without credentials are `system:anonymous` instead of 401 (`--anonymous-auth=true`). */
  anonymous?: boolean
  /** More static tokens, as a `--token-auth-file` lists them. */
  tokens?: ({ token: string } & IdentitySpec)[]
}

/** The authentication and authorization of one sandbox. */
export class Auth {
  readonly authenticator: Authenticator
  readonly authorizer: RbacAuthorizer
  readonly #reviews: Reviews
  readonly #cluster: Cluster

  constructor(cluster: Cluster, opts: AuthOptions = {}) {
    this.#cluster = cluster
    this.authenticator = new Authenticator(cluster.store, { anonymous: opts.anonymous === true })
    this.authorizer = new RbacAuthorizer(cluster.store)
    this.#reviews = new Reviews(this.authorizer, this.authenticator, cluster.store)
    for (const t of opts.tokens ?? []) this.authenticator.addToken(t.token, userFor(t))
  }

  /** A new bearer token for an identity (valid until the sandbox closes). */
  issueToken(spec: IdentitySpec): string {
    return this.authenticator.issue(userFor(spec))
  }

  /**
   * Who an HTTP request is: its bearer token's user, then impersonation.
   * @throws StatusError 401, or 403 for impersonation the requester may not do
   */
  identify(headers: IncomingHttpHeaders): UserInfo {
    const user = this.authenticator.authenticate(headers.authorization)
    return impersonate(user, headers, (a) => this.authorizer.authorize(a))
  }

  /** @throws StatusError 403 unless `user` may make this resource request */
  authorizeRequest(req: ApiRequest, user: UserInfo): void {
    const attrs = resourceAttributes(req, user)
    const d = this.authorizer.authorize(attrs)
    if (!d.allowed) throw forbidden(attrs, d.reason)
  }

  /** @throws StatusError 403 unless `user` may request this non-resource path */
  authorizePath(method: string, path: string, user: UserInfo): void {
    const attrs = nonResourceAttributes(method, path, user)
    const d = this.authorizer.authorize(attrs)
    if (!d.allowed) throw forbidden(attrs, d.reason)
  }

  /** The answer to a review or TokenRequest; undefined for every other request. */
  serve(req: ApiRequest): Reply | undefined {
    if (req.verb !== 'create') return undefined
    const key = `${req.group}/${req.resource}${req.subresource ? `/${req.subresource}` : ''}`
    if (!reviewResources.has(key)) return undefined
    if (req.version !== 'v1' || (key === '/serviceaccounts/token' && (!req.namespace || !req.name))) return undefined
    return this.#reviews.serve(req, req.user ?? loopbackUser)
  }

  /** Creates the bootstrap ClusterRoles and ClusterRoleBindings, with the aggregated roles filled in. */
  bootstrap(): void {
    const create = (resource: string, obj: KubeObject) => {
      const reply = this.#cluster.respond({ verb: 'create', group: 'rbac.authorization.k8s.io', version: 'v1', resource, body: obj, query: new URLSearchParams(), userAgent: 'kube-apiserver' })
      if (reply.status !== 201) throw new Error(`cannot create ${resource} ${obj.metadata.name ?? ''}: ${reply.json ?? JSON.stringify(reply.body)}`)
    }
    for (const role of bootstrapClusterRoles()) create('clusterroles', role)
    for (const b of bootstrapClusterRoleBindings()) create('clusterrolebindings', b)
    // What the clusterrole-aggregation controller does once a real cluster has started.
    for (let round = 0; round < 5; round++) {
      let changed = false
      const all = this.#cluster.store.list('rbac.authorization.k8s.io/clusterroles').map((s) => s.obj)
      for (const role of all) {
        const rules = aggregatedRules(role, all)
        if (!rules) continue
        changed = true
        aggregateApply(this.#cluster, role.metadata.name ?? '', rules)
      }
      if (!changed) break
    }
  }
}

/** The clusterrole-aggregation controller's write: a forced apply of a ClusterRole's `rules` only. */
export function aggregateRequest(name: string, rules: unknown[], userAgent = 'kube-controller-manager/v1.34.0 (linux/amd64) kubernetes/sandbox/clusterrole-aggregation-controller'): ApiRequest {
  return {
    verb: 'patch',
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    resource: 'clusterroles',
    name,
    body: JSON.stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules }),
    contentType: 'application/apply-patch+yaml',
    query: new URLSearchParams({ fieldManager: 'clusterrole-aggregation-controller', force: 'true' }),
    userAgent,
  }
}

/** {@link aggregateRequest}, answered at once (the server's own start-up). */
export function aggregateApply(cluster: Pick<Cluster, 'respond'>, name: string, rules: unknown[]): Reply {
  return cluster.respond(aggregateRequest(name, rules))
}
