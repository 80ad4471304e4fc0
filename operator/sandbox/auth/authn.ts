/**
 * Authentication, as kube-apiserver's bearer-token chain does it: static tokens (the admin token
 * of the sandbox's kubeconfig, and those a test or `--kubeconfig-for` issues — the sandbox's
 * `--token-auth-file`), and ServiceAccount tokens from the TokenRequest API. A request with an
 * unknown, expired or revoked token is 401; one with no token is 401 too unless anonymous
 * requests are enabled (`--anonymous-auth`), when it is `system:anonymous`.
 *
 * ServiceAccount tokens are JWTs with the claims kube-apiserver's issuer writes, signed with
 * HS256 and a key of this sandbox (a real server signs RS256 with its service-account key). Each
 * authentication looks the ServiceAccount up: deleting it (or re-creating it, with a new uid)
 * invalidates its tokens, as the real token authenticator's lookup does.
 */
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { StatusError } from '../errors.ts'
import type { Store } from '../store.ts'
import { allUnauthenticated, anonymous, serviceAccountGroups, serviceAccountUsername, type UserInfo } from './user.ts'

/** The token of the sandbox's own kubeconfig. */
export const adminToken = 'sandbox'

/** The identity behind the admin token: cluster-admin through `system:masters`. */
export const adminUser: UserInfo = { username: 'sandbox-admin', groups: ['system:masters', 'system:authenticated'] }

/** The audience and issuer of ServiceAccount tokens, as a kubeadm cluster sets them. */
export const defaultAudience = 'https://kubernetes.default.svc.cluster.local'

/** 401, exactly as kube-apiserver answers a request it cannot authenticate. */
export function unauthorized(): StatusError {
  return new StatusError(401, 'Unauthorized', 'Unauthorized')
}

interface Claims {
  aud: string[]
  exp: number
  iat: number
  iss: string
  jti: string
  'kubernetes.io': { namespace: string; serviceaccount: { name: string; uid: string } }
  nbf: number
  sub: string
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')

/** Token authentication of one sandbox. */
export class Authenticator {
  #static = new Map<string, UserInfo>([[adminToken, adminUser]])
  #key = randomBytes(32)
  #store: Store
  #anonymous: boolean

  /** @param anonymous serve requests without credentials as `system:anonymous` (else 401) */
  constructor(store: Store, opts: { anonymous?: boolean } = {}) {
    this.#store = store
    this.#anonymous = opts.anonymous === true
  }

  /** Registers a static token for an identity (as a line of `--token-auth-file`). */
  addToken(token: string, user: UserInfo): void {
    this.#static.set(token, structuredClone(user))
  }

  /** A new random static token for an identity. */
  issue(user: UserInfo): string {
    const token = `sandbox-${randomBytes(18).toString('base64url')}`
    this.addToken(token, user)
    return token
  }

  /** A ServiceAccount token (what TokenRequest returns) for a stored ServiceAccount. */
  serviceAccountToken(namespace: string, name: string, uid: string, audiences: string[], expirationSeconds: number): { token: string; expires: Date } {
    const now = Math.floor(Date.now() / 1000)
    const claims: Claims = {
      aud: audiences,
      exp: now + expirationSeconds,
      iat: now,
      iss: defaultAudience,
      jti: randomUUID(),
      'kubernetes.io': { namespace, serviceaccount: { name, uid } },
      nbf: now,
      sub: serviceAccountUsername(namespace, name),
    }
    const unsigned = `${b64({ alg: 'HS256', kid: 'sandbox' })}.${b64(claims)}`
    return { token: `${unsigned}.${this.#sign(unsigned)}`, expires: new Date(claims.exp * 1000) }
  }

  #sign(data: string): string {
    return createHmac('sha256', this.#key).update(data).digest('base64url')
  }

  /** The identity of a bearer token, or undefined when the token is not valid (now). */
  userOfToken(token: string): UserInfo | undefined {
    const known = this.#static.get(token)
    if (known) return copyUser(known)
    const parts = token.split('.')
    if (parts.length !== 3) return undefined
    const [header = '', payload = '', signature = ''] = parts
    const expected = Buffer.from(this.#sign(`${header}.${payload}`))
    const given = Buffer.from(signature)
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined
    let claims: Claims
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Claims
    } catch {
      return undefined
    }
    const now = Date.now() / 1000
    if (claims.exp <= now || claims.nbf > now + 60) return undefined
    const { namespace, serviceaccount } = claims['kubernetes.io']
    const sa = this.#store.get('/serviceaccounts', namespace, serviceaccount.name)
    if (!sa || sa.obj.metadata.uid !== serviceaccount.uid || sa.obj.metadata.deletionTimestamp) return undefined
    return {
      username: serviceAccountUsername(namespace, serviceaccount.name),
      uid: serviceaccount.uid,
      groups: [...serviceAccountGroups(namespace), 'system:authenticated'],
      extra: { 'authentication.kubernetes.io/credential-id': [`JTI=${claims.jti}`] },
    }
  }

  /**
   * The identity of a request from its `Authorization` header.
   * @throws StatusError 401 for a bad token, or for no token when anonymous requests are off
   */
  authenticate(authorization: string | undefined): UserInfo {
    const m = /^bearer\s+(\S+)\s*$/i.exec(authorization ?? '')
    if (!m) {
      if (this.#anonymous) return { username: anonymous, groups: [allUnauthenticated] }
      throw unauthorized()
    }
    const user = this.userOfToken(m[1] ?? '')
    if (!user) throw unauthorized()
    return user
  }
}

/** A copy of a known identity that the caller may change (as structuredClone made it, for a fraction of the cost). */
function copyUser(u: UserInfo): UserInfo {
  const out: UserInfo = { username: u.username, groups: [...u.groups] }
  if (u.uid !== undefined) out.uid = u.uid
  if (u.extra !== undefined) out.extra = Object.fromEntries(Object.entries(u.extra).map(([k, v]) => [k, [...v]]))
  return out
}
