/**
 * Authentication and authorization of `/metrics` requests, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` (pkg/metrics/filters) does it for kubebuilder's
 * scaffold: the bearer token goes to the API server in a TokenReview; the user it names must be
 * allowed `get` on the non-resource URL of the request (`/metrics`) by a SubjectAccessReview
 * (RBAC: a ClusterRole with `nonResourceURLs: ["/metrics"]`, kustomize/rbac/metrics_reader_role.yaml).
 * Answers are cached as the delegating authenticator and authorizer of k8s.io/apiserver cache them
 * (a token 1 min; an allow 5 min, a denial 30 s), so a scrape every few seconds costs the API
 * server little. The operator's ServiceAccount needs `create` on both reviews.
 */
import type { IncomingMessage } from 'node:http'
import { apiErrorFrom, type KubeClient } from './client.ts'

/** Why a request is refused: the HTTP status and body controller-runtime answers with. */
export interface Refusal {
  status: 401 | 403 | 500
  body: string
}

/** Decides whether a request may read the metrics; undefined means it may. */
export type MetricsAuthorizer = (req: IncomingMessage) => Promise<Refusal | undefined>

interface UserInfo {
  username?: string
  uid?: string
  groups?: string[]
  extra?: Record<string, string[]>
}

/** Options of {@link kubeMetricsAuthorizer}. */
export interface MetricsAuthorizerOptions {
  /** Told about a review that failed (an error, not a denial), as controller-runtime logs it. */
  onError?: (message: string, err: Error) => void
  /** Milliseconds since some origin (tests); default performance.now. */
  now?: () => number
}

const AUTHN_TTL_MS = 60_000
const ALLOW_TTL_MS = 5 * 60_000
const DENY_TTL_MS = 30_000
/** Entries each cache keeps at most (the oldest go first): k8s.io/apiserver's caches are bounded too. */
const CACHE_SIZE = 1024

class TtlCache<V> {
  #entries = new Map<string, { value: V; until: number }>()
  get(key: string, now: number): V | undefined {
    const e = this.#entries.get(key)
    if (!e) return undefined
    if (e.until <= now) {
      this.#entries.delete(key)
      return undefined
    }
    return e.value
  }
  set(key: string, value: V, until: number): void {
    this.#entries.delete(key)
    this.#entries.set(key, { value, until })
    if (this.#entries.size > CACHE_SIZE) this.#entries.delete(this.#entries.keys().next().value!)
  }
}

/** The bearer token of an `Authorization` header (RFC 6750; the scheme is case-insensitive). */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return m?.[1]
}

/** POSTs a review (create-only, cluster-scoped: no entry in the client's resource table) and returns its status. */
async function review<S>(client: KubeClient, group: string, kind: string, resource: string, spec: Record<string, unknown>): Promise<S | undefined> {
  const res = await client.request({ method: 'POST', path: `/apis/${group}/v1/${resource}`, body: { apiVersion: `${group}/v1`, kind, spec } })
  if (res.status < 200 || res.status > 299) throw apiErrorFrom(res.status, res.body, typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined)
  return (JSON.parse(res.body) as { status?: S }).status
}

/** A {@link MetricsAuthorizer} that asks the API server through `client`. */
export function kubeMetricsAuthorizer(client: KubeClient, opts: MetricsAuthorizerOptions = {}): MetricsAuthorizer {
  const now = opts.now ?? (() => performance.now())
  const tokens = new TtlCache<UserInfo | null>()
  const decisions = new TtlCache<boolean>()
  const failed = (message: string, err: unknown): Refusal => {
    opts.onError?.(message, err instanceof Error ? err : new Error(String(err)))
    return { status: 500, body: `${message}\n` }
  }
  return async (req) => {
    const token = bearerToken(req.headers.authorization)
    if (token === undefined) return { status: 401, body: 'Unauthorized\n' }
    let user = tokens.get(token, now())
    if (user === undefined) {
      try {
        const status = await review<{ authenticated?: boolean; user?: UserInfo }>(client, 'authentication.k8s.io', 'TokenReview', 'tokenreviews', { token })
        user = status?.authenticated === true && status.user ? status.user : null
      } catch (err) {
        return failed('Authentication failed', err)
      }
      tokens.set(token, user, now() + AUTHN_TTL_MS)
    }
    if (user === null) return { status: 401, body: 'Unauthorized\n' }
    const verb = (req.method ?? 'GET').toLowerCase() === 'head' ? 'get' : (req.method ?? 'GET').toLowerCase()
    const path = new URL(req.url ?? '/', 'http://x').pathname
    const name = user.username ?? ''
    const key = JSON.stringify([name, user.uid ?? '', [...(user.groups ?? [])].sort(), user.extra ?? {}, verb, path])
    let allowed = decisions.get(key, now())
    if (allowed === undefined) {
      try {
        const status = await review<{ allowed?: boolean }>(client, 'authorization.k8s.io', 'SubjectAccessReview', 'subjectaccessreviews', {
          user: name,
          groups: user.groups ?? [],
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.extra ? { extra: user.extra } : {}),
          nonResourceAttributes: { path, verb },
        })
        allowed = status?.allowed === true
      } catch (err) {
        return failed(`Authorization for user ${name} failed`, err)
      }
      decisions.set(key, allowed, now() + (allowed ? ALLOW_TTL_MS : DENY_TTL_MS))
    }
    return allowed ? undefined : { status: 403, body: `Authorization denied for user ${name}\n` }
  }
}
